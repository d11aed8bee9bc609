"""Issue 25, item 7: bounds that bind. A file past a limit is refused while it is read, at the
line where it crosses the limit; an assistant's oversized argument is refused without echoing it.
(The webhook's total deadline is tested in test_notify.py.)"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client

from upstream_dagster import settings as settings_mod
from upstream_dagster.cli.assistant import server
from upstream_dagster.evaluation.scenario import load_scenario
from upstream_dagster.spec import SpecError, load_estate, reading

TIER = (
    "  - name: t{i}\n"
    "    match:\n"
    '      - names: ["x{i}_*"]\n'
    "    requirements:\n"
    "      require_owner: true\n"
)
FAULT = "  - {{kind: drop_column, relation: shop.orders, column: c{i}}}\n"
EXPECT = "expect:\n  root_cause: {dataset: shop.orders, column: c1}\n"


def _refused(
    load: Callable[[Path], object], path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[SpecError, int]:
    """The error, and how many values the reader composed before it stopped: a count, not a
    time, so the test says the same on a loaded machine."""
    composed = 0
    compose = reading._Counting.compose_node

    def counting(self: reading._Counting, parent: object, index: object) -> object:
        nonlocal composed
        composed += 1
        return compose(self, parent, index)  # type: ignore[arg-type]

    monkeypatch.setattr(reading._Counting, "compose_node", counting)
    with pytest.raises(SpecError) as err:
        load(path)
    return err.value, composed


def test_a_ten_thousand_tier_estate_is_refused_at_tier_501_without_reading_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "estate.yaml"
    path.write_text("version: 1\ntiers:\n" + "".join(TIER.format(i=i) for i in range(10_000)))
    err, composed = _refused(load_estate, path, monkeypatch)
    per_tier = 9  # the tier mapping, 3 keys, 3 values, the match list's item and its names list
    assert composed <= 10 + 501 * (per_tier + 4), f"{composed} values composed: read past tier 501"
    tier_501 = 3 + 500 * TIER.count("\n")  # the line of '- name: t500'
    assert err.line == tier_501 and f"{path}:{tier_501}" in str(err)
    assert "more than 500 tiers (MAX_TIERS)" in err.problem
    assert "merge tiers" in err.fix


def test_a_ten_thousand_fault_scenario_is_refused_at_fault_51_with_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("faults:\n" + "".join(FAULT.format(i=i) for i in range(10_000)) + EXPECT)
    err, composed = _refused(load_scenario, path, monkeypatch)
    assert composed <= 10 + 51 * 7, f"{composed} values composed: read past fault 51"
    assert err.line == 52 and f"{path}:52" in str(err)
    assert "more than 50 faults (MAX_FAULTS)" in err.problem and "split it" in err.fix

    again = tmp_path / "recurs.yaml"  # the recurrence's faults are held to the same limit
    again.write_text(
        "faults:\n"
        + FAULT.format(i=0)
        + EXPECT
        + "recurrence:\n  faults:\n"
        + "".join("  " + FAULT.format(i=i) for i in range(10_000))
    )
    err, _ = _refused(load_scenario, again, monkeypatch)
    assert "MAX_FAULTS" in err.problem and err.line == 4 + 2 + 50 + 1


def test_a_scenario_at_the_fault_limit_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "fifty.yaml"
    path.write_text("faults:\n" + "".join(FAULT.format(i=i) for i in range(50)) + EXPECT)
    assert len(load_scenario(path).faults) == 50


def test_nesting_past_the_depth_limit_names_the_line_and_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "estate.yaml"
    nested = "".join(f"{'  ' * i}k{i}:\n" for i in range(80)) + "  " * 80 + "x\n"
    path.write_text("version: 1\n" + nested)
    err, _ = _refused(load_estate, path, monkeypatch)
    assert "nested too deeply" in err.problem and "MAX_DEPTH" in err.problem
    assert err.line == 52  # k50's mapping: the 51st level, counting the top as the first


def test_an_oversized_assistant_argument_is_refused_in_one_line_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("UPSTREAM_STATE_DIR", str(tmp_path / "state"))
    huge = "x" * 5_000_000

    async def ask() -> dict[str, tuple[bool, str]]:
        async with Client(server(settings_mod.load())) as client:
            out = {}
            for tool, args in (("incident", {"key": huge}), ("violations", {"dataset": huge})):
                result = await client.call_tool(tool, args)
                text = "\n".join(getattr(b, "text", "") for b in result.content)
                out[tool] = (bool(result.is_error), text)
            return out

    with caplog.at_level(logging.DEBUG):
        answers = asyncio.run(ask())
    for tool, limit in (("incident", "MAX_KEY (300)"), ("violations", "MAX_DATASET (512)")):
        is_error, text = answers[tool]
        assert is_error and limit in text and "5000000 characters" in text, text[:300]
        assert len(text) < 300 and "\n" not in text and "fix:" in text
    assert max(len(r.getMessage()) for r in caplog.records) < 500
