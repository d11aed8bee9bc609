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
from typing import Any
from urllib.parse import quote

import dagster as dg
import pytest
from typer.testing import CliRunner

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli import app

from .conftest import estate_copy
from .servers import free_port, serve

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("UPSTREAM_CHROMIUM", "/usr/bin/chromium"))
PERCENT = re.compile(r"^overall\s.*?(\d+\.\d)%\s*$", re.M)


def _overall(text: str) -> str:
    found = PERCENT.findall(text)
    assert found, text[-1500:]
    return str(found[0])


@pytest.fixture(scope="module")
def dev(
    built_estate: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, settings_mod.Settings]]:
    """`dagster dev` on the code location, over a private copy of the built estate: one for
    the module (its webserver, daemon and code servers are about 20 s of CPU to start)."""
    from upstream_dagster.runs import dagster_instance

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `.ci/run` installs Debian's chromium"
    with estate_copy(built_estate, tmp_path_factory.mktemp("ui") / "state") as estate:
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


@pytest.fixture
def ui(dev: tuple[str, settings_mod.Settings]) -> tuple[str, settings_mod.Settings]:
    """The module's `dagster dev`, its estate as the build left it: whatever a test before
    wrote to DataHub is undone first (the same batch is then planned again)."""
    url, estate = dev  # the environment points at its estate for the whole module
    undone = CliRunner().invoke(app, ["reset", "--yes"])
    assert undone.exit_code == 0 and "restored" in undone.output, undone.output
    return url, estate


def _dismiss(page: object) -> None:
    """Dagster's "join the community" dialog covers a fresh browser profile's first page."""
    skip = page.get_by_role("button", name="Skip")  # type: ignore[attr-defined]
    if skip.count():
        skip.first.click()


def _set_config(page: Any, config: str, must_hold: str) -> None:
    """The launchpad's config set to ``config`` and accepted ("No errors"). Picking a partition
    makes the launchpad reload its config asynchronously, which can land after a first set on a
    busy machine: set it again until the editor holds it and the launchpad accepts it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    editor = "document.querySelector('.CodeMirror').CodeMirror"
    for _ in range(4):
        page.wait_for_load_state("networkidle")
        page.evaluate(f"(v) => {editor}.setValue(v)", config)
        try:
            page.get_by_text("No errors").first.wait_for(timeout=20_000)
        except PlaywrightTimeout:
            continue
        if must_hold in page.evaluate(f"() => {editor}.getValue()"):
            return
    raise AssertionError(f"the launchpad never accepted the config:\n{config}")


def _launch_writeback(page: Any, url: str, digest: str, nonce: str, shot: Path | None) -> str:
    """The coverage write-back launched from its launchpad with an approval config: the run id."""
    page.goto(
        f"{url}/locations/upstream/jobs/coverage_writeback_job/playground",
        wait_until="networkidle",
    )
    _dismiss(page)
    page.locator(".CodeMirror").first.wait_for()
    config = (
        "ops:\n  coverage_writeback:\n    config:\n"
        f"      batch_digest: {digest}\n      nonce: {nonce}\n      approve: [all]\n"
        "      reviewer: alice\n"
    )
    _set_config(page, config, digest)
    if shot is not None:
        page.screenshot(path=str(shot))
    page.get_by_role("button", name="Launch Run").click()
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f-]{36}.*"))
    found = re.search(r"/runs/([0-9a-f-]{36})", page.url)
    assert found, page.url
    return found[1]


def _finished(settings: settings_mod.Settings, run_id: str) -> Any:
    """The run, once finished (five minutes at most)."""
    from upstream_dagster.runs import dagster_instance

    instance = dagster_instance(settings)
    deadline = time.monotonic() + 300
    while True:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        if run.is_finished or time.monotonic() > deadline:
            return run
        time.sleep(2)


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
    planned = runner.invoke(app, ["plan", "--record"])
    digest = re.search(r"digest ([0-9a-f]{16})", planned.output)
    nonce = re.search(r"nonce ([0-9a-f]{16})", planned.output)
    assert planned.exit_code == 0 and digest and nonce, planned.output

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

        run_id = _launch_writeback(page, url, digest[1], nonce[1], shots / "ui-launchpad.png")
        run = _finished(settings, run_id)
        page.reload(wait_until="networkidle")
        _dismiss(page)
        page.get_by_text("RUN_SUCCESS").first.wait_for()
        page.screenshot(path=str(shots / "ui-writeback-run.png"))
        assert run.is_success, run.status

        rescored = runner.invoke(app, ["score"])  # the write landed in DataHub: the dial moved
        after = _overall(rescored.output)
        assert float(after) > float(before), (before, after)

        # undo, then the same batch approved again from the launchpad: the gate never wedges
        undone = runner.invoke(app, ["reset", "--yes"])
        assert undone.exit_code == 0 and "restored" in undone.output, undone.output
        assert _overall(runner.invoke(app, ["score"]).output) == before
        replanned = runner.invoke(app, ["plan", "--record"])
        again = re.search(r"digest ([0-9a-f]{16})", replanned.output)
        renewed = re.search(r"nonce ([0-9a-f]{16})", replanned.output)
        assert again and again[1] == digest[1], replanned.output  # the same batch, re-approvable
        assert renewed and renewed[1] != nonce[1]  # ...with a new one-time value
        replayed = _finished(settings, _launch_writeback(page, url, digest[1], nonce[1], None))
        assert replayed.is_success  # an answer, not a failure: refused, nothing written
        assert _overall(runner.invoke(app, ["score"]).output) == before
        rerun = _finished(settings, _launch_writeback(page, url, again[1], renewed[1], None))
        assert rerun.is_success, rerun.status
        page.goto(f"{url}/runs/{rerun.run_id}", wait_until="networkidle")
        _dismiss(page)
        page.get_by_text("RUN_SUCCESS").first.wait_for()
        browser.close()
    assert _overall(runner.invoke(app, ["score"]).output) == after  # written again, exactly

    from upstream_dagster.runs import dagster_instance

    instance = dagster_instance(settings)
    receipts = instance.get_latest_materialization_event(dg.AssetKey("coverage_writeback"))
    assert receipts is not None and receipts.run_id == rerun.run_id
    written = receipts.asset_materialization
    assert written is not None and "refused" not in written.metadata
    assert int(str(written.metadata["written"].value)) > 0


def _runs_of(settings: settings_mod.Settings, job: str, key: str) -> list[Any]:
    from upstream_dagster.runs import dagster_instance

    found = dagster_instance(settings).get_runs(dg.RunsFilter(job_name=job))
    return [
        r
        for r in found
        if key in (r.tags.get("dagster/partition"), r.tags.get("upstream/incident"))
    ]


EDITOR = "document.querySelector('.CodeMirror').CodeMirror"


def _type_reviewer(page: Any, name: str) -> str:
    """In a launchpad a link filled in, the reviewer's one act: their name, typed after
    `reviewer: '` (nothing else is edited). Returns the config as launched."""
    page.wait_for_function(f"() => {EDITOR} && {EDITOR}.getValue().includes(\"reviewer: ''\")")
    page.evaluate(
        f"""() => {{
            const cm = {EDITOR};
            const lines = cm.getValue().split('\\n');
            const line = lines.findIndex((l) => l.includes("reviewer: ''"));
            cm.focus();
            cm.setCursor({{line, ch: lines[line].indexOf("''") + 1}});
        }}"""
    )
    page.keyboard.type(name)
    page.wait_for_function(f"() => {EDITOR}.getValue().includes(\"reviewer: '{name}'\")")
    page.get_by_text("No errors").first.wait_for()
    return str(page.evaluate(f"() => {EDITOR}.getValue()"))


def _launch(page: Any) -> str:
    page.get_by_role("button", name="Launch Run").click()
    page.wait_for_url(re.compile(r".*/runs/[0-9a-f-]{36}.*"))
    found = re.search(r"/runs/([0-9a-f-]{36})", page.url)
    assert found, page.url
    return found[1]


def _until(what: str, found: Any, minutes: float = 20) -> Any:
    """``found()`` once it is truthy; the deadline only stops a hung test (no timing is
    asserted: the machine is shared)."""
    deadline = time.monotonic() + minutes * 60
    while not (value := found()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(5)
    return value


def test_a_reviewer_works_a_batch_and_an_incident_in_the_ui_typing_only_their_name(
    ui: tuple[str, settings_mod.Settings], tmp_path: Path
) -> None:
    """Issue 28's walk, in a real browser, screenshots kept: the proposals page; a subset of
    the batch approved from a link that fills the launchpad in (the reviewer types their name,
    nothing else); the write-back; a fault the daemon's sensor investigates; the red check
    links to its incident; the incident's page shows the root cause, the evidence and the
    diff, and links to its approval; approved the same way, the daemon's sensors rebuild and
    resolve it; the resolution links the run that fixed it and says how long it took."""
    from playwright.sync_api import sync_playwright

    from upstream_dagster.datahub.incidents import short_id
    from upstream_dagster.defs import journal
    from upstream_dagster.evaluation.breakage import break_estate
    from upstream_dagster.evaluation.scenario import load_scenario
    from upstream_dagster.runs import dagster_instance

    url, settings = ui
    shots = Path(os.environ.get("UPSTREAM_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    planned = CliRunner().invoke(app, ["plan", "--record"])
    assert planned.exit_code == 0, planned.output
    instance = dagster_instance(settings)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(90_000)

        # 1. the batch on one screen: how to approve, the proposals by gain, what stays
        page.goto(f"{url}/assets/proposals", wait_until="networkidle")
        _dismiss(page)
        page.get_by_text("Approve all 40 proposals").first.wait_for()
        page.get_by_text("why_gains_are_equal").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "ui-review-1-proposals.png"))
        wide = page.evaluate(
            "() => [...document.querySelectorAll('td')].some("
            "(td) => td.scrollWidth > td.clientWidth + 2)"
        )
        assert not wide  # nothing cut at the right edge: no value wider than its column

        # 2. a subset: the owners, from the link that lists them in the launchpad
        row = page.locator("tr", has=page.get_by_text("approve_some", exact=True)).first
        row.get_by_text("[Show Markdown]").click()
        link = page.get_by_role("link", name=re.compile(r"^\d+ owners$"))
        count = int(link.inner_text().split()[0])
        link.click()
        page.locator(".CodeMirror").first.wait_for()
        config = _type_reviewer(page, "alice")
        page.screenshot(path=str(shots / "ui-review-2-launchpad.png"))
        chosen = re.findall(r"^ +- (p-[0-9a-f]{10})", config, re.M)
        assert len(chosen) == count > 0
        wrote = _finished(settings, _launch(page))
        assert wrote.is_success, wrote.status
        # runs say who launched them and why: filtered by the reviewer's tag
        page.goto(
            f"{url}/runs?q%5B0%5D=tag%3Aupstream%2Freviewer%3Dalice", wait_until="networkidle"
        )
        _dismiss(page)
        page.get_by_text("upstream/launched-by: launchpad").first.wait_for()
        page.screenshot(path=str(shots / "ui-review-3-writeback.png"))
        (entry,) = [e for e in journal.entries(instance) if e.run_id == wrote.run_id]
        assert entry.written and sorted(entry.approved) == sorted(chosen)  # the subset, only
        tags = wrote.tags | (instance.get_run_by_id(wrote.run_id) or wrote).tags
        assert tags["upstream/reviewer"] == "alice" and tags["upstream/gate"] == "write"
        assert tags["upstream/launched-by"] == "launchpad"
        assert tags["upstream/approving"] == f"{count} owners"

        # 3. a fault; the daemon's sensor opens the incident and investigates it
        break_estate(settings, load_scenario(ROOT / "scenarios/vendor_drift.yaml"))
        verdicts = _until(
            "the failing_assertions sensor's verdict", lambda: journal.verdicts(instance)
        )
        (verdict,) = verdicts
        ident = short_id(verdict.key)

        # 4. the red check links to its incident: one click
        page.goto(
            f"{url}/assets/marts/agg_daily_revenue?view=checks&checkDetail=monitor_revenue_not_zero",
            wait_until="networkidle",
        )
        _dismiss(page)
        page.get_by_text(f"investigated as incident {ident}").first.wait_for()
        page.screenshot(path=str(shots / "ui-review-4-failing-check.png"))
        with page.context.expect_page() as opened:
            page.get_by_text("/assets/incident_verdict").first.click()
        page = opened.value
        page.set_default_timeout(90_000)

        # 5. the incident: root cause, evidence and the diff, readable on its page
        page.wait_for_load_state("networkidle")
        page.get_by_text("root_cause", exact=True).first.wait_for()
        body = page.inner_text("body")
        assert "vendor.discounts.discount_amt (rename)" in body and "1.00" in body
        assert "(timeline) vendor.discounts: column discount_amt was renamed" in body
        page.screenshot(path=str(shots / "ui-review-5-incident.png"))
        page.get_by_text("upstream_renamed_column(").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "ui-review-6-root-cause-and-diff.png"))

        # 6. approve the fix from the link on the incident's page; the sensors do the rest
        page.get_by_role("link", name=f"Approve the fix for incident {ident}").click()
        page.locator(".CodeMirror").first.wait_for()
        _type_reviewer(page, "alice")
        # the incident's partition came with the link, shown as its tag
        page.get_by_text(re.compile("^partition: " + re.escape(verdict.key[:30]))).first.wait_for()
        page.screenshot(path=str(shots / "ui-review-7-incident-launchpad.png"))
        fixed = _finished(settings, _launch(page))
        assert fixed.is_success and fixed.tags.get("dagster/partition") == verdict.key
        _until(
            "incident_resolution_job, after the sensors' rebuild",
            lambda: [
                r for r in _runs_of(settings, "incident_resolution_job", verdict.key)
                if r.is_finished
            ],
        )  # fmt: skip

        # 7. resolved: the run that fixed it linked, the time it took recorded
        page.goto(
            f"{url}/assets/incident_resolution?view=partitions&partition="
            + quote(verdict.key, safe=""),
            wait_until="networkidle",
        )
        _dismiss(page)
        page.get_by_text("time_to_resolve_minutes").first.wait_for()
        page.screenshot(path=str(shots / "ui-review-8-resolved.png"))
        browser.close()
    done = instance.get_latest_materialization_event(dg.AssetKey("incident_resolution"))
    assert done is not None and done.asset_materialization is not None
    meta = done.asset_materialization.metadata
    assert meta["resolved"].value is True
    assert meta["fixed_by_run"] == dg.MetadataValue.dagster_run(fixed.run_id)
    assert meta["approved_by"].value == "alice"
    listed = CliRunner().invoke(app, ["incidents"])
    assert re.search(rf"^  {ident} .* resolved +resolved in ", listed.stdout, re.M), listed.stdout
