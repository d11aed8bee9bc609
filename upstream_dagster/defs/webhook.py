"""One POST to an incoming webhook, bounded in total time however slowly the server answers.

A socket timeout bounds each read, not the answer: a server that trickles a byte every few
seconds keeps a per-read timeout from ever firing (Slack's SDK sets only that one), and the
`nudge` sensor, in Dagster's daemon, would hold every later tick. Here every phase (connect, TLS,
send, each read of the answer) is given only the time left before one deadline, so the whole
send ends by then. A proxy named by HTTPS_PROXY/HTTP_PROXY is used as Slack's SDK uses it.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import socket
import ssl
import time
import urllib.parse
import urllib.request
from typing import Any

MAX_ANSWER = 4096  # of the answer's body: Slack answers "ok" or a one-line reason


class Late(Exception):
    """The deadline passed before the webhook finished answering."""


class _Clock:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        left = self.ends - time.monotonic()
        if left <= 0:
            raise Late(f"the webhook did not answer within {self.seconds:g} s")
        return left


class _Reader(io.RawIOBase):
    """The socket's reader with each read's timeout set to the time left: the deadline binds."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, clock: _Clock) -> None:
        self.raw, self.sock, self.clock = raw, sock, clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self.sock.settimeout(self.clock.left())
        try:
            return self.raw.readinto(buffer)
        except TimeoutError:
            raise Late(f"the webhook did not answer within {self.clock.seconds:g} s") from None

    def close(self) -> None:
        self.raw.close()  # lets go of the socket, as http.client's own reader does
        super().close()


def _answer_class(clock: _Clock) -> type[http.client.HTTPResponse]:
    class Answer(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            # the same socket reader (it keeps the socket open), each read given the time left
            self.fp = io.BufferedReader(_Reader(self.fp.detach(), sock, clock))

    return Answer


class _Https(http.client.HTTPSConnection):
    """The TLS handshake is given the time left after connecting, not the whole timeout."""

    clock: _Clock
    name: str  # the webhook's host, which its certificate names (not a proxy's)

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock.settimeout(self.clock.left())
        context = ssl.create_default_context()
        self.sock = context.wrap_socket(self.sock, server_hostname=self.name)


def _connection(url: str, clock: _Clock) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """A connection to the webhook (through the environment's proxy, if any), the request
    target to send and the headers the proxy needs."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the webhook URL is not an http(s) URL (scheme {parts.scheme!r})")
    https = parts.scheme == "https"
    host, port = parts.hostname, parts.port or (443 if https else 80)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and urllib.request.proxy_bypass(host):
        proxy = None
    via = urllib.parse.urlsplit(proxy if proxy and "//" in proxy else f"http://{proxy}")
    server = (via.hostname or host, via.port or 80) if proxy else (host, port)
    conn = (_Https if https else http.client.HTTPConnection)(*server, timeout=clock.left())
    if isinstance(conn, _Https):
        conn.clock, conn.name = clock, host
    conn.response_class = _answer_class(clock)
    auth: dict[str, str] = {}
    if proxy and via.username:
        creds = f"{urllib.parse.unquote(via.username)}:{urllib.parse.unquote(via.password or '')}"
        auth["Proxy-Authorization"] = "Basic " + base64.b64encode(creds.encode()).decode()
    if proxy and https:
        conn.set_tunnel(host, port, headers=auth)
        return conn, target, {}
    return conn, (url if proxy else target), auth  # a plain-HTTP proxy takes the whole URL


def post_json(url: str, body: dict[str, Any], seconds: float) -> tuple[int, str]:
    """POST ``body`` as JSON; the status and the start of the answer's body. Raises `Late`
    when the whole exchange takes longer than ``seconds``, `OSError`/`http.client.HTTPException`
    when the network or the server fails, ValueError for a URL that is not http(s)."""
    clock = _Clock(seconds)
    conn, target, headers = _connection(url, clock)
    try:
        conn.connect()
        conn.sock.settimeout(clock.left())  # sendall: one timeout for the whole request
        headers["Content-Type"] = "application/json;charset=utf-8"
        conn.request("POST", target, body=json.dumps(body).encode(), headers=headers)
        answer = conn.getresponse()
        text = answer.read(MAX_ANSWER).decode("utf-8", "replace")
        clock.left()  # the whole answer, within the deadline
        return answer.status, text
    except TimeoutError:  # connect or send ran out of the time they were given
        raise Late(f"the webhook did not answer within {seconds:g} s") from None
    finally:
        conn.close()
