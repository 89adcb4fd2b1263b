"""The kill test's report: one dict (what ``--json`` writes) and the table rendered from
that same dict, so the two cannot disagree."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

if TYPE_CHECKING:
    from wayline.cli.killtest import TrialResult

__all__ = ["COLUMNS", "NARROW", "detail_lines", "drift_lines", "render", "summary"]

COLUMNS = (
    ("mode", "mode"),
    ("trial", "#"),
    ("kill", "killed at"),
    ("committed_step", "committed"),
    ("executions", "ran"),
    ("unknown", "unknown"),
    ("beyond", "beyond"),
    ("bound", "bound"),
    ("replayed", "replayed"),
    ("duplicate_effects", "effect x2"),
    ("resent", "resent"),
    ("status", "status"),
    ("state_equal", "state"),
    ("verdict", "verdict"),
)
"""(field, header). ``ran``: task starts of the killed process; ``unknown``: those the
committed history does not know; ``beyond``: those past the mode's bound (broken);
``replayed``: task starts the resumed process repeated; ``effect x2``: keys performed twice
(broken); ``resent``: idempotent effects resent under their key (allowed); ``state``: equal
to an uninterrupted run's."""
NARROW = (
    *("mode", "trial", "kill", "committed_step", "beyond", "duplicate_effects"),
    *("state_equal", "verdict"),
)
"""The columns shown without ``--verbose``: what broke, readable at 80 columns (``beyond``
and ``effect x2`` are the counts that break a guarantee; ``--verbose`` and ``--json`` have
the rest)."""
SUMMED = ("executions", "unknown", "beyond", "replayed", "duplicate_effects", "resent")


def summary(
    results: Sequence[TrialResult],
    *,
    graph: str,
    db: str,
    seed: int,
    kill_db: bool,
    runs: int,
) -> dict[str, Any]:
    trials = []
    for r in results:
        row = dataclasses.asdict(r)
        row["verdict"] = "ok" if r.ok else "BROKEN"
        row["ok"] = r.ok
        trials.append(row)
    totals = []
    for mode in dict.fromkeys(r.mode for r in results):
        mine = [t for t in trials if t["mode"] == mode]
        total: dict[str, Any] = {"mode": mode, "trials": len(mine)}
        for key in SUMMED:
            total[key] = sum(t[key] for t in mine)
        total["states_equal"] = sum(t["states_equal"] for t in mine)
        total["runs"] = sum(t["runs"] for t in mine)
        replays = [n for t in mine for n in t["replayed_steps"]]
        total["max_replayed_steps"] = max(replays, default=0)
        total["mean_replayed_steps"] = round(sum(replays) / len(replays), 2) if replays else 0.0
        total["ok"] = all(t["ok"] for t in mine)
        totals.append(total)
    return {
        "graph": graph,
        "db": db,
        "seed": seed,
        "kill_db": kill_db,
        "runs_per_trial": runs,
        "trials": trials,
        "totals": totals,
        "ok": all(t["ok"] for t in trials),
    }


def render(report: dict[str, Any], *, every_column: bool = False) -> Table:
    """The table: the columns that say what broke (``NARROW``, readable at 80 columns),
    or ``every_column``."""
    fleet = report["runs_per_trial"] > 1
    title = f"wayline killtest {report['graph']} on {report['db']}"
    if fleet:
        title += f": one worker holding {report['runs_per_trial']} runs killed per trial"
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    columns = list(COLUMNS)
    if fleet:  # per run: how many steps the new worker executed again
        columns.insert(9, ("replayed_steps", "steps/run max/mean"))
    if not every_column:
        columns = [c for c in columns if c[0] in NARROW or c[0] == "replayed_steps"]
    for _, header in columns:
        left = header in ("mode", "killed at")
        table.add_column(header, justify="left" if left else "right", no_wrap=left)
    for row in report["trials"]:
        table.add_row(*(_cell(key, row) for key, _ in columns))
    table.add_section()
    for total in report["totals"]:
        cells = []
        for key, _ in columns:
            if key == "mode":
                cells.append(f"{total['mode']} total")
            elif key == "trial":
                cells.append(str(total["trials"]))
            elif key in SUMMED:
                cells.append(str(total[key]))
            elif key == "replayed_steps":
                cells.append(f"{total['max_replayed_steps']}/{total['mean_replayed_steps']}")
            elif key == "state_equal":
                cells.append(f"{total['states_equal']}/{total['runs']}")
            elif key == "verdict":
                cells.append("ok" if total["ok"] else "[red]BROKEN[/]")
            else:
                cells.append("")
        table.add_row(*cells, style="bold")
    return table


def detail_lines(report: dict[str, Any]) -> list[str]:
    """``--verbose``: per trial, the counts the narrow table leaves out, one line each."""
    lines = []
    for row in report["trials"]:
        status = row["status"] + (f" ({row['note']})" if row["note"] else "")
        lines.append(
            f"{row['mode']} #{row['trial']} ({row['kill']}, run {row['run_id']}): "
            f"ran {row['executions']}, unknown {row['unknown']} (bound {row['bound']}), "
            f"replayed {row['replayed']}, resent {row['resent']}, status {status}"
            + (f", error {row['error']}" if row["error"] else "")
        )
    return lines


def drift_lines(report: dict[str, Any], *, width: int = 60) -> list[str]:
    """One line per trial whose state differs from its reference run: the first channel
    that differs, with both values (cut to ``width`` characters each; ``--json`` has them
    whole)."""
    lines = []
    for row in report["trials"]:
        drift = row.get("drift")
        if not drift:
            continue
        mine, ref = (_short(drift[k], width) for k in ("run", "reference"))
        lines.append(
            f"{row['mode']} #{row['trial']}: state differs first at channel "
            f"{drift['channel']!r}: {mine} after the kill, {ref} in an unkilled run of the "
            "same id"
        )
    return lines


def _short(value: Any, width: int) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(key: str, row: dict[str, Any]) -> str:
    value = row[key]
    if key == "replayed_steps":
        return f"{max(value, default=0)}/{round(sum(value) / len(value), 2) if value else 0.0}"
    if key == "state_equal":
        if row["runs"] > 1:
            return f"{row['states_equal']}/{row['runs']}"
        return {True: "yes", False: "[red]no[/]", None: "n/a"}[value]
    if key == "verdict":
        return "ok" if value == "ok" else "[red]BROKEN[/]"
    if key == "status" and row["note"]:
        return f"{value} ({row['note']})"
    return "-" if value is None else str(value)
