"""The Dagster UI as a reviewer uses it, in a real browser: `dagster dev` (webserver and daemon)
on the code location over a built estate, driven by headless Chromium (Debian's package,
through Playwright). It reads the dial where a reviewer reads it, checks it against
`upstream score`, launches the coverage write-back from the launchpad with an approval config,
and confirms the write landed in DataHub.

Screenshots go to the test's temporary folder, or to ``UPSTREAM_SCREENSHOT_DIR`` when set
(`UPSTREAM_SCREENSHOT_DIR=docs make test` refreshes the ones the README shows).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli import app

from .servers import free_port, serve

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("UPSTREAM_CHROMIUM", "/usr/bin/chromium"))
PERCENT = re.compile(r"^overall\s.*?(\d+\.\d)%\s*$", re.M)


def _overall(text: str) -> str:
    found = PERCENT.findall(text)
    assert found, text[-1500:]
    return str(found[0])


@pytest.fixture
def ui(estate: settings_mod.Settings) -> Iterator[tuple[str, settings_mod.Settings]]:
    """`dagster dev` on the code location, over a private copy of the built estate."""
    from upstream_dagster.runs import dagster_instance

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `.ci/run` installs Debian's chromium"
    dagster_instance(estate)  # writes dagster.yaml and points DAGSTER_HOME at the copy
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serve(
        [str(Path(sys.executable).with_name("dagster")), "dev", "-w", "workspace.yaml"]
        + ["-h", "127.0.0.1", "-p", str(port)],
        f"{url}/server_info",
        estate.state_dir / "dagster-dev.log",
        ROOT,
    ):
        yield url, estate


def _dismiss(page: object) -> None:
    """Dagster's "join the community" dialog covers a fresh browser profile's first page."""
    skip = page.get_by_role("button", name="Skip")  # type: ignore[attr-defined]
    if skip.count():
        skip.first.click()


def test_a_reviewer_reads_the_dial_and_approves_a_write_back_in_the_dagster_ui(
    ui: tuple[str, settings_mod.Settings], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    url, settings = ui
    shots = Path(os.environ.get("UPSTREAM_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    scored = runner.invoke(app, ["score"])
    assert scored.exit_code == 0, scored.output
    before = _overall(scored.output)
    planned = runner.invoke(app, ["plan"])
    digest = re.search(r"digest ([0-9a-f]{16})", planned.output)
    assert planned.exit_code == 0 and digest, planned.output

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(60_000)

        page.goto(f"{url}/asset-groups", wait_until="networkidle")
        _dismiss(page)
        page.get_by_text("Global asset lineage").first.wait_for()
        for group in ("raw_feeds", "marts", "datahub", "conformance", "coverage", "reliability"):
            page.get_by_text(group, exact=True).first.wait_for()
        page.screenshot(path=str(shots / "ui-asset-graph.png"))

        page.goto(f"{url}/assets/conformance", wait_until="networkidle")
        _dismiss(page)
        page.get_by_text("overall_percent").first.wait_for()
        page.get_by_text("By tier").first.wait_for()  # the dial's markdown table
        body = page.inner_text("body")
        shown = re.findall(r"^overall(?:\s+\d+){4}\s+(\d+\.\d)%", body, re.M)
        assert shown == [before], (shown, before)  # the UI shows what the CLI prints
        page.screenshot(path=str(shots / "ui-conformance.png"), full_page=True)

        page.goto(
            f"{url}/locations/upstream/jobs/coverage_writeback_job/playground",
            wait_until="networkidle",
        )
        _dismiss(page)
        page.locator(".CodeMirror").first.wait_for()
        config = (
            "ops:\n  coverage_writeback:\n    config:\n"
            f"      batch_digest: {digest[1]}\n      approve: [all]\n      reviewer: alice\n"
        )
        page.evaluate("(v) => document.querySelector('.CodeMirror').CodeMirror.setValue(v)", config)
        page.get_by_text("No errors").first.wait_for()
        page.screenshot(path=str(shots / "ui-launchpad.png"))
        page.get_by_role("button", name="Launch Run").click()
        page.wait_for_url(re.compile(r".*/runs/[0-9a-f-]{36}.*"))
        run_id = re.search(r"/runs/([0-9a-f-]{36})", page.url)[1]  # type: ignore[index]

        from upstream_dagster.runs import dagster_instance

        instance = dagster_instance(settings)
        deadline = time.monotonic() + 300
        while True:
            run = instance.get_run_by_id(run_id)
            assert run is not None
            if run.is_finished or time.monotonic() > deadline:
                break
            time.sleep(2)
        page.reload(wait_until="networkidle")
        _dismiss(page)
        page.get_by_text("RUN_SUCCESS").first.wait_for()
        page.screenshot(path=str(shots / "ui-writeback-run.png"))
        browser.close()
    assert run.is_success, run.status

    rescored = runner.invoke(app, ["score"])  # the write landed in DataHub: the dial moved
    after = _overall(rescored.output)
    assert float(after) > float(before), (before, after)
    receipts = instance.get_latest_materialization_event(dg.AssetKey("coverage_writeback"))
    assert receipts is not None and receipts.run_id == run_id
