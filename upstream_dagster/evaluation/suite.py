"""`upstream eval`: pick the cases, run them live or replay their records, print the grid."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from upstream_dagster.errors import UpstreamError
from upstream_dagster.evaluation.draw import draw, read_estate
from upstream_dagster.evaluation.estates import estate_env, estate_settings
from upstream_dagster.evaluation.grid import Grid, Result, table
from upstream_dagster.evaluation.runner import eval_base, load_cases, replay_case, run_suite
from upstream_dagster.evaluation.scenario import Scenario
from upstream_dagster.settings import Settings
from upstream_dagster.spec import load_estate
from upstream_dagster.state import records


def _cases(settings: Settings, cases_dir: Path, n: int, seed: int, replay: bool,
           records_dir: Path) -> tuple[list[Scenario], Path, str]:  # fmt: skip
    """The cases, where their records live, and the grid's title."""
    if n:
        where = records_dir / f"random-{seed}"
        title = f"--random {n} --seed {seed}"
        if settings.dbt_source_dir != settings.project_root / "dbt_demo":
            title = f"{_project_name(settings)} {title}"
        if replay:
            paths = sorted(where.glob("*.json"))
            if len(paths) < n:
                raise UpstreamError(
                    f"{where} holds {len(paths)} recorded random case(s), not {n}",
                    f"run `upstream eval --random {n} --seed {seed}` live first",
                )
            found = [Scenario.model_validate(records.load(p)["scenario"]) for p in paths]
            return found[:n], where, title
        base = replace(settings, state_dir=eval_base(settings))  # draw over the clean estate
        return draw(read_estate(base), n, seed), where, title
    if not cases_dir.is_dir():
        raise UpstreamError(f"{cases_dir} is not a directory", "pass --cases DIR with *.yaml")
    paths = sorted(cases_dir.glob("*.yaml"))
    if not paths:
        raise UpstreamError(f"{cases_dir} holds no *.yaml case", "see scenarios/README.md")
    default = cases_dir.resolve() == (settings.project_root / "evals" / "cases").resolve()
    where = records_dir if default else records_dir / cases_dir.name
    return load_cases(paths), where, "shipped cases" if default else str(cases_dir)


def _project_name(settings: Settings) -> str:
    """The dbt project's own name (the estate's, in a grid's title)."""
    config = yaml.safe_load((settings.dbt_source_dir / "dbt_project.yml").read_text()) or {}
    return str(config.get("name") or settings.dbt_source_dir.name)


def _replay(cases: list[Scenario], where: Path, settings: Settings, out: Console) -> list[Result]:
    results: list[Result] = []
    for case in cases:
        spec = load_estate(estate_settings(settings, case.estate).estate_file)
        path = where / f"{case.name}.json"
        if not path.exists():
            raise UpstreamError(
                f"no record for case {case.name} in {where}",
                "run the case live once (`upstream eval`), which writes its record",
            )
        rows = replay_case(case, records.load(path), spec)
        results += rows
        for r in rows:
            out.print(f"  replayed {r.case} ({r.occurrence}): {r.verdict}", highlight=False)
    return results


def _live(cases: list[Scenario], where: Path, settings: Settings, jobs: int, out: Console
          ) -> tuple[list[Result], list[str]]:  # fmt: skip
    results: list[Result] = []
    errors: list[str] = []
    started = time.monotonic()
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(), console=out,
    ) as bar:  # fmt: skip
        task = bar.add_task(f"{len(cases)} cases, {jobs} at a time", total=len(cases))

        def done(case: Scenario, rows: list[Result], record: dict[str, Any] | None, error: str
                 ) -> None:  # fmt: skip
            bar.advance(task)
            if error:
                errors.append(f"{case.name}: {error}")
                bar.console.print(f"  {case.name}: ERROR {error}", markup=False)
                return
            assert record is not None
            record["scenario"] = json.loads(case.model_dump_json(exclude_defaults=True))
            records.write(where / f"{case.name}.json", record)
            results.extend(rows)
            for r in rows:
                bar.console.print(
                    f"  {r.case} ({r.occurrence}): {r.verdict}, {r.top or 'no hypothesis'} "
                    f"{r.confidence:.2f}, {r.reads} reads, {r.seconds:.0f} s",
                    markup=False,
                    highlight=False,
                )

        # each estate a case names gets its own clean base, built once
        for name in sorted({c.estate or "" for c in cases}):
            chosen = estate_settings(settings, name or None)
            group = [c for c in cases if (c.estate or "") == name]
            run_suite(group, eval_base(chosen), jobs, done, estate_env(chosen))
    out.print(f"{len(cases)} cases in {(time.monotonic() - started) / 60:.1f} min")
    order = {c.name: i for i, c in enumerate(cases)}
    results.sort(key=lambda r: (order[r.case], r.occurrence))
    return results, errors


def write_grid(page: Path, title: str, lines: list[str]) -> None:
    """Replace the grid between its markers in docs/evaluation.md (one block per suite)."""
    tag = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    start, end = f"<!-- eval-grid:{tag}:start -->", f"<!-- eval-grid:{tag}:end -->"
    text = page.read_text()
    block = f"{start}\n" + "\n".join(lines) + f"\n{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + f"\n\n{block}\n"
    page.write_text(text)


def main(settings: Settings, cases_dir: Path, n: int, seed: int, replay: bool, jobs: int,
         records_dir: Path, readme: bool, out: Console) -> list[str]:  # fmt: skip
    """Run or replay, print the grid, return the targets missed."""
    cases, where, title = _cases(settings, cases_dir, n, seed, replay, records_dir)
    out.print(f"[bold]{'replaying' if replay else 'running'} {len(cases)} cases[/] ({title})")
    errors: list[str] = []
    if replay:
        results = _replay(cases, where, settings, out)
    else:
        results, errors = _live(cases, where, settings, jobs, out)
        if not n:  # a record whose case is gone would replay a case that no longer exists
            names = {c.name for c in cases}
            for stale in where.glob("*.json"):
                if stale.stem not in names:
                    stale.unlink()
    lines = table(results)
    out.print("\n".join(lines), markup=False, highlight=False)
    missed = Grid(tuple(results)).misses() + [f"case failed to run: {e}" for e in errors]
    if errors:
        out.print("\n".join(["", "Cases that failed to run:", *errors]), markup=False)
    if readme:
        write_grid(settings.project_root / "docs" / "evaluation.md", title, lines)
    return missed
