"""Every way to get estate.yaml wrong gives an error naming the file, the line and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from upstream_dagster.spec import SpecError, load_estate

ROOT = Path(__file__).resolve().parent.parent
GOOD_TIER = """\
version: 1
tiers:
  - name: gold
    match:
      - names: ["fct_*"]
    requirements:
{requirements}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "estate.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "line", "problem", "fix"),
    [
        ("version: 1\ntiers: []\ncolour: blue\n", 3, "unknown key 'colour'", "valid here"),
        (
            GOOD_TIER.format(requirements="      requre_owner: true"),
            7,
            "unknown requirement 'requre_owner'",
            "did you mean 'require_owner'",
        ),
        (
            GOOD_TIER.format(requirements="      min_assertions: many"),
            7,
            "min_assertions",
            "expected type",
        ),
        (
            GOOD_TIER.format(requirements="      freshness_sla_hours: -3"),
            7,
            "greater than 0",
            "change the value",
        ),
        (
            GOOD_TIER.replace('"fct_*"', '"fct_[*"').format(
                requirements="      require_owner: true"
            ),
            5,
            "opens a '[' it never closes",
            "change the value",
        ),
        (
            GOOD_TIER.replace('"fct_*"', '"fct *"').format(
                requirements="      require_owner: true"
            ),
            5,
            "is not a glob",
            "change the value",
        ),
        (GOOD_TIER.format(requirements="      {}"), 3, "has no requirements", "change the value"),
        (
            GOOD_TIER.replace('      - names: ["fct_*"]', "      - {{}}").format(
                requirements="      require_owner: true"
            ),
            5,
            "empty selector",
            "change the value",
        ),
        ("version: 1\ntiers:\n  - name: gold\n   match: x\n", 4, "invalid YAML", "YAML syntax"),
        ("version: 1\n", 1, "tiers is required", "add 'tiers:'"),
        ("- just\n- a list\n", 1, "no mapping", "version: 1"),
        (
            GOOD_TIER.format(requirements="      require_owner: true")
            + "policies:\n  actuation: yolo\n",
            9,
            "actuation",
            "expected type",
        ),
    ],
)
def test_bad_estate_files_name_file_line_and_fix(
    tmp_path: Path, text: str, line: int, problem: str, fix: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_estate(path)
    assert err.value.file == path
    assert err.value.line == line, str(err.value)
    assert problem in err.value.problem, str(err.value)
    assert fix in err.value.fix, str(err.value)
    assert f"{path}:{line}" in str(err.value)


def test_missing_file_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        load_estate(tmp_path / "nope.yaml")
    assert "does not exist" in err.value.problem and "--estate" in err.value.fix


def test_duplicate_tier_names_are_refused(tmp_path: Path) -> None:
    tier = GOOD_TIER.format(requirements="      require_owner: true").split("tiers:\n")[1]
    with pytest.raises(SpecError, match="two tiers are named 'gold'"):
        load_estate(write(tmp_path, "version: 1\ntiers:\n" + tier + tier))


def test_shipped_estate_files_load_and_old_files_without_new_blocks_still_load(
    tmp_path: Path,
) -> None:
    demo = load_estate(ROOT / "estate.yaml")
    assert [t.name for t in demo.tiers] == ["tier-1", "tier-2", "transformations", "raw-feeds"]
    assert demo.policies.approvers, "the demo estate must name who may approve"
    load_estate(ROOT / "upstream_dagster" / "estates" / "showcase-ecommerce.yaml")
    minimal = load_estate(
        write(tmp_path, GOOD_TIER.format(requirements="      require_owner: true"))
    )
    assert minimal.policies.actuation == "dry-run"  # absent blocks take safe defaults


@pytest.mark.slow
def test_cli_reports_a_bad_estate_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_TIER.format(requirements="      requre_owner: true"))
    done = subprocess.run(
        [sys.executable, "-m", "upstream_dagster.cli", "score", "--estate", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "UPSTREAM_STATE_DIR": str(tmp_path / "state")},
    )
    assert done.returncode == 1
    assert f"{path}:7" in done.stderr and "require_owner" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_policy_that_writes_must_name_its_approvers(tmp_path: Path) -> None:
    text = GOOD_TIER.format(requirements="      require_owner: true") + (
        "policies:\n  actuation: ratify\n  approvers: []\n"
    )
    with pytest.raises(SpecError, match="needs someone to approve"):
        load_estate(write(tmp_path, text))


OK_TIER = GOOD_TIER.format(requirements="      require_owner: true")
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)


@pytest.mark.parametrize(
    ("content", "problem", "fix"),
    [
        (
            OK_TIER + "policies:\n  actuation: dry-run\npolicies:\n  actuation: auto\n",
            "'policies' is given twice in the top level (first at line 8)",
            "merge the two blocks",
        ),
        (
            OK_TIER + "policies:\n  actuation: ratify\n  approvers: ['']\n",
            "approvers[0]",
            "change the value",
        ),
        (
            OK_TIER.replace("gold", "gold\\x1b[2J").replace(
                "name: gold\\x1b[2J", 'name: "gold\\x1b[2J"'
            ),
            "control character",
            "plain text",
        ),
        (LAUGHS, "expands to more than", "anchors and aliases"),
        ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply", "nests a few levels"),
        (
            "version: 1\ntiers:\n"
            + "".join(
                f"  - name: t{i}\n    match: [{{names: ['x{i}']}}]\n"
                "    requirements: {require_owner: true}\n"
                for i in range(600)
            ),
            "more than 500 tiers (MAX_TIERS)",
            "merge tiers",
        ),
    ],
    ids=[
        "duplicate-policies",
        "empty-approver",
        "terminal-escape",
        "billion-laughs",
        "deep-nesting",
        "too-many-tiers",
    ],
)
def test_hostile_estate_files_are_refused_with_the_problem_named(
    tmp_path: Path, content: str, problem: str, fix: str
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(SpecError) as err:
        load_estate(path)
    assert problem in err.value.problem, str(err.value)
    assert fix in err.value.fix, str(err.value)


def test_a_binary_file_a_directory_and_a_device_are_named_for_what_they_are(
    tmp_path: Path,
) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("version: 1\n# caf\xe9\n".encode("latin-1"))
    for path, says in (
        (latin, "is not UTF-8 text"),
        (tmp_path, "is not a regular file"),
        (Path("/dev/zero"), "is not a regular file"),
    ):
        with pytest.raises(SpecError) as err:
            load_estate(path)
        assert says in err.value.problem
