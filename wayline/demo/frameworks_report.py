"""``wayline crashtest --framework ...``: run the frameworks crash test and print the table
of charges per trial (``wayline.demo.frameworks_crash``)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from wayline.demo.frameworks_crash import (
    FRAMEWORKS,
    POINTS,
    FrameworkTrial,
    run_framework_matrix,
    table_rows,
)

__all__ = ["frameworks_crashtest", "render"]


def _parse(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in chosen if v not in allowed]
    if bad or not chosen:
        raise ValueError(
            f"unknown {what} {', '.join(bad) or '(none)'}; one of {', '.join(allowed)}"
        )
    return chosen


def render(console: Console, results: list[FrameworkTrial]) -> bool:
    """Print the table; True when every cell charged what the reference text measured."""
    table = Table(title="charges per trial (SIGKILL, then a fresh process resumes)")
    for col in ("framework", "arm", "kill point", "charges per trial", "expected", ""):
        table.add_column(col)
    rows = table_rows(results)
    for row in rows:
        table.add_row(
            row["framework"],
            row["arm"],
            row["point"],
            " ".join(row["charges"]),
            str(row["expected"]),
            "ok" if row["ok"] else "[red]UNEXPECTED[/red]",
        )
    console.print(table)
    for row in rows:
        for err in row["errors"]:
            console.print(f"[red]{row['framework']} {row['arm']} {row['point']}: {err}[/red]")
    return all(row["ok"] for row in rows)


def frameworks_crashtest(
    console: Console,
    frameworks: str,
    points: str,
    trials: int,
    json_path: Path | None,
    keep: bool,
) -> int:
    try:
        fws = _parse(frameworks, FRAMEWORKS, "framework")
        default = "before_charge,provider_committed,after_record,after_commit"
        pts = list(POINTS) if points == default else _parse(points, POINTS, "kill point")
    except ValueError as exc:
        console.print(f"[red]{exc}[/red]")
        return 2

    def progress(r: FrameworkTrial) -> None:
        console.print(f"{r.framework:10} {r.arm:8} {r.point:14} trial {r.trial}: {r.token}")

    results = run_framework_matrix(fws, points=pts, trials=trials, keep=keep, progress=progress)
    ok = render(console, results)
    if json_path is not None:
        json_path.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0 if ok else 1
