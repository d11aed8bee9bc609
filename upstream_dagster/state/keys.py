"""Approvers' signing keys: ed25519, made by `upstream keygen`, used by `upstream approve` and
`upstream sign`. The private key stays with the person (a file only they can read); estate.yaml
lists the public half under ``policies.approver_keys``."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from upstream_dagster.errors import UpstreamError
from upstream_dagster.gate import approval_message

KEYS_ENV = "UPSTREAM_KEYS_DIR"


def keys_dir() -> Path:
    return Path(os.environ.get(KEYS_ENV) or Path.home() / ".config" / "upstream" / "keys")


def default_key(name: str) -> Path:
    return keys_dir() / f"{name}.key"


def generate(path: Path) -> str:
    """A new private key at ``path`` (readable by its owner only); returns the public key as
    estate.yaml lists it. Never overwrites a key."""
    if path.exists():
        raise UpstreamError(
            f"{path} already holds a key", "keep it, or pass --out another path for a new one"
        )
    private = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    return public_of(private)


def public_of(private: Ed25519PrivateKey) -> str:
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return base64.b64encode(raw).decode()


MAX_KEY_BYTES = 16_384  # an ed25519 PEM is ~120 bytes


def sign_message(path: Path, message: bytes, reviewer: str) -> str:
    """``reviewer``'s signature over ``message`` with the key at ``path``."""
    try:
        if path.exists() and not path.is_file():  # a folder, a device, /dev/zero ...
            raise ValueError("not a regular file")
        with open(path, "rb") as handle:
            pem = handle.read(MAX_KEY_BYTES + 1)
        if len(pem) > MAX_KEY_BYTES:
            raise ValueError(f"larger than a key file ({MAX_KEY_BYTES} bytes)")
        private = serialization.load_pem_private_key(pem, password=None)
    except FileNotFoundError:
        raise UpstreamError(
            f"no signing key at {path}",
            f"`upstream keygen {reviewer}` makes one (then add its line to estate.yaml), or "
            "pass --key PATH",
        ) from None
    except OSError as exc:
        raise UpstreamError(
            f"cannot read the signing key {path} ({exc.strerror or exc})",
            "pass --key with the key file `upstream keygen` made (readable by you only)",
        ) from None
    except (ValueError, TypeError) as exc:
        raise UpstreamError(f"{path} is not a signing key ({exc})", "pass --key PATH") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise UpstreamError(f"{path} is not an ed25519 key", "make one with `upstream keygen`")
    return base64.b64encode(private.sign(message)).decode()


def sign(path: Path, kind: str, digest: str, reviewer: str, policy: str, nonce: str) -> str:
    """The signature that proves ``reviewer`` approves ``kind`` ``digest``, planned under
    ``policy``, with its one-time value ``nonce``."""
    return sign_message(path, approval_message(kind, digest, reviewer, policy, nonce), reviewer)
