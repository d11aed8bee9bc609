"""Issue 21, item 2: a nudge when a person is needed, to a local webhook server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import dagster as dg
import pytest

from upstream_dagster.definitions import core
from upstream_dagster.defs import notify
from upstream_dagster.runs import dagster_instance, run_job
from upstream_dagster.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


class Hook:
    """A webhook that records what it is sent and answers with the status it is told to."""

    def __init__(self) -> None:
        self.posts: list[dict[str, str]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if hook.status == 200:
                    hook.posts.append(json.loads(body))
                self.send_response(hook.status)
                self.end_headers()
                self.wfile.write(b"ok" if hook.status == 200 else b"no")

            def log_message(self, *args: object) -> None:
                return

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hook() -> Iterator[Hook]:
    found = Hook()
    yield found
    found.server.shutdown()


def test_one_nudge_per_waiting_batch_retried_when_the_webhook_fails(
    estate: Settings, hook: Hook, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = (
        (ROOT / "estate.yaml")
        .read_text()
        .replace(
            "  identity: not-enforced\n",
            "  identity: not-enforced\n  notify:\n    webhook_env: TEST_HOOK\n    attempts: 2\n",
            1,
        )
    )
    (tmp_path / "estate.yaml").write_text(text)
    monkeypatch.setenv("UPSTREAM_ESTATE", str(tmp_path / "estate.yaml"))
    monkeypatch.setenv("TEST_HOOK", hook.url)
    from upstream_dagster.settings import load

    settings = load()
    batch = run_job(settings, "score").output_for_node("proposals")
    defs = core(settings)
    sensor = defs.resolve_sensor_def("nudge")
    instance = dagster_instance(settings)

    def tick(cursor: str | None) -> tuple[str | None, str]:
        with dg.build_sensor_context(
            instance=instance, definitions=defs, resources=defs.resources, cursor=cursor
        ) as ctx:
            result = sensor(ctx)
            return ctx.cursor, str(
                result.skip_message if hasattr(result, "skip_message") else result
            )

    hook.status = 500  # the webhook is down: logged, not marked sent
    cursor, said = tick(None)
    assert hook.posts == [] and "1 failed" in said
    hook.status = 200  # back up: sent once, with what waits, its price and how to act
    cursor, said = tick(cursor)
    assert len(hook.posts) == 1 and "sent 1" in said
    message = hook.posts[0]["text"]
    assert batch.digest in message and "projected" in message
    assert f"upstream approve --all --digest {batch.digest}" in message
    assert "coverage_writeback_job" in message and "/assets/proposals" in message
    # `upstream nudges` prints what the sensor sends, so a person can try it with no webhook
    from typer.testing import CliRunner

    from upstream_dagster.cli import app

    printed = CliRunner().invoke(app, ["nudges"])
    assert printed.exit_code == 0 and message in printed.stdout, printed.output
    assert "$TEST_HOOK" in printed.stdout
    cursor, said = tick(cursor)  # never twice for the same item
    assert len(hook.posts) == 1 and "sent 0" in said


def test_without_a_webhook_the_sensor_skips_and_says_why(estate: Settings) -> None:
    defs = core(estate)
    sensor = defs.resolve_sensor_def("nudge")
    with dg.build_sensor_context(
        instance=dagster_instance(estate), definitions=defs, resources=defs.resources
    ) as ctx:
        result = sensor(ctx)
    assert "no policies.notify" in str(result.skip_message)


class Trickle:
    """A webhook that takes the message, then answers one byte every quarter second (the whole
    answer takes 100 s): each read gets a byte long before any per-read timeout, so only a
    total deadline ends the wait."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.answer = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 370 + b"\r\n\r\n"
        self.sent = 0  # bytes of the answer sent before the caller hung up
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            conn.recv(65536)
            try:
                for byte in self.answer:  # 100 s for the whole answer, unless hung up on
                    conn.sendall(bytes([byte]))
                    self.sent += 1
                    time.sleep(0.25)
            except OSError:
                pass
            finally:
                self.done.set()


def test_a_webhook_that_trickles_its_answer_fails_the_send_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(notify, "SEND_SECONDS", 1.0)
    slow = Trickle()
    why = notify.send(slow.url, "a batch waits")
    assert why == "the webhook did not answer within 1 s"
    # the caller hung up part-way: the server could not send the whole answer (without the
    # deadline the send would have read all of it and answered 200, whatever the load)
    assert slow.done.wait(300)
    slow.server.close()
    assert slow.sent < len(slow.answer), f"{slow.sent} of {len(slow.answer)} bytes sent"


def test_a_send_posts_slacks_shape_and_reports_the_status(hook: Hook) -> None:
    assert notify.send(hook.url, "a batch waits") is None
    assert hook.posts == [{"text": "a batch waits"}]
    hook.status = 500
    assert notify.send(hook.url, "again") == "HTTP 500: no"
    assert "ConnectionRefusedError" in str(notify.send("http://127.0.0.1:9/hook", "x"))
    assert "not an http(s) URL" in str(notify.send("ftp://example.com/hook", "x"))
