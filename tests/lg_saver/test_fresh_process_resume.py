"""A fresh process resumes a LangGraph thread from WaylineSaver exactly: parallel writes (a
peer's write is kept when its sibling fails, and the peer does not run again), a subgraph
namespace that interrupts, and the answer given by a third process. The state, the
pending interrupt and the history match an uninterrupted run on LangGraph's InMemorySaver.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from resume_graph import THREAD, build, summary

import wayline
from wayline.instrument import byte_report

HERE = Path(__file__).resolve().parent


def phase(url: str, name: str, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    done = subprocess.run(
        [sys.executable, str(HERE / "resume_graph.py"), url, name, str(tmp / "exec.log"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def baseline() -> tuple[dict[str, Any], dict[str, Any]]:
    app = build(InMemorySaver(), None, fail_b=False)
    app.invoke({"log": [], "n": 0, "answer": ""}, THREAD)
    paused = json.loads(json.dumps(summary(app), default=repr))
    app.invoke(Command(resume="yes"), THREAD)
    return paused, json.loads(json.dumps(summary(app), default=repr))


def test_three_processes_resume_a_thread_exactly(tmp_path: Path, pg_url: str) -> None:
    for url in (f"sqlite:///{tmp_path / 'lg.db'}", pg_url):
        (tmp_path / "exec.log").unlink(missing_ok=True)
        started = phase(url, "start", tmp_path)
        assert started["result"] == "failed: b fails on its first run"
        assert started["next"] == ["b"] and started["values"]["log"] == ["a" * 300]  # a finished
        paused = phase(url, "continue", tmp_path)
        answered = phase(url, "answer", tmp_path)
        want_paused, want_done = baseline()
        for got, want in ((paused, want_paused), (answered, want_done)):
            for field in ("values", "next", "interrupts", "sub_values"):
                assert got[field] == want[field], field
            # the failed first attempt adds no checkpoint: the histories are the same
            assert [h[:2] for h in got["history"]] == [h[:2] for h in want["history"]]
        assert paused["interrupts"] == [{"question": "ship?", "seen": 2}]
        assert answered["values"]["answer"] == "yes" and answered["next"] == []
        runs = (tmp_path / "exec.log").read_text().split()
        # a ran once: its write was pending when b failed, and kept; b ran twice; the
        # subgraph's ask ran at the pause and again with the answer, as in LangGraph
        assert sorted(runs[:2]) == ["a", "b"]  # in parallel: either order
        assert runs[2:] == ["b", "ask", "ask", "after", "tail"]
        store = wayline.connect(url)
        report = byte_report(store, "default", "resume-1")
        tables = report.by_table()
        assert set(tables) == {"lg_checkpoints", "lg_values", "lg_writes"}
        assert report.payload > 0 and store.get_run("default", "resume-1") is not None
        store.close()
