"""Who a reviewer is, as DataHub says it: the user a personal access token belongs to.

GraphQL ``me`` answers with the authenticated actor's ``corpUser`` (DataHub's MeResolver reads
the actor the AuthenticationFilter derived from the ``Authorization: Bearer`` header; a token it
does not accept is a 401 before any resolver runs). A server with metadata-service
authentication off authenticates every request as its system client (``__datahub_system``
unless the server's DATAHUB_SYSTEM_CLIENT_ID says otherwise, which Upstream is configured with
too): that names nobody, so it is refused. No name is guessed at from its spelling. The token
is sent in this one exchange and kept nowhere; no message repeats it."""

from __future__ import annotations

from upstream_dagster.datahub.gms.client import GmsClient, first_line
from upstream_dagster.datahub.graphql_ops import WHOAMI
from upstream_dagster.errors import DataHubUnavailable, UpstreamError

USE_YOUR_TOKEN = (
    "put your own DataHub personal access token (DataHub > Settings > Access Tokens) in "
    "DATAHUB_REVIEWER_TOKEN, or name another variable with --token-env"
)


SYSTEM_CLIENT_ID = "__datahub_system"  # DataHub's default (application.yaml)


def whoami(
    url: str, token: str, *, system_client_id: str = SYSTEM_CLIENT_ID, timeout_sec: float = 15
) -> str:
    """The DataHub username ``token`` belongs to on the GMS at ``url``; refused when it is the
    server's system client, as with authentication off."""
    if not token:
        raise UpstreamError("no DataHub token came with the approval", USE_YOUR_TOKEN)
    try:
        client = GmsClient(url, token, timeout_sec=timeout_sec)
    except DataHubUnavailable as exc:
        raise UpstreamError(exc.problem.replace(token, "***"), exc.fix) from None
    try:
        data = client._gql(WHOAMI, {})
    except Exception as exc:  # noqa: BLE001 - the SDK raises many types for one refusal
        raise UpstreamError(
            f"DataHub did not accept the reviewer's token "
            f"({first_line(exc).replace(token, '***')})",
            USE_YOUR_TOKEN + "; a token that expired or was revoked is refused",
        ) from None
    finally:
        client.close()
    user = (data.get("me") or {}).get("corpUser") or {}
    name = str(user.get("username") or str(user.get("urn", "")).rpartition(":")[2])
    if not name or name == system_client_id:
        raise UpstreamError(
            f"DataHub answered for {name or 'nobody'}, its system client, not a person: "
            "authentication is off on this server, so any token is its system actor",
            "turn on DataHub's metadata-service authentication, or set policies.identity to "
            "signed in estate.yaml (if the server's DATAHUB_SYSTEM_CLIENT_ID is not the "
            "default, set Upstream's DATAHUB_SYSTEM_CLIENT_ID to the same value)",
        )
    return name
