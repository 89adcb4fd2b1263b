"""SIGKILL inside a group commit (several runs' steps in one transaction, before COMMIT):
no committed step of any run is lost, the killed group's steps are not committed, and
resuming re-runs only the steps that were in flight; the same with the worker's slots as
greenlets on one thread (``WorkerConfig.one_thread``) before and after the kill.

A run's node with ``n = j`` starts only after step ``j`` committed (durability sync), so
every execution the killed worker logged names a step that must still be committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import group_child as gc
import pytest

import wayline
from wayline.client import Wayline

pytestmark = pytest.mark.crash

HERE = Path(__file__).resolve().parent
RUNS = 8
DEADLINE_S = 60.0


def _child(tmp: Path, runs: int, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, str(HERE / "group_child.py"), str(tmp / "runs.db")]
    cmd += [str(tmp / "exec.log"), "--runs", str(runs), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _executions(tmp: Path) -> list[tuple[str, int, int]]:
    lines = (tmp / "exec.log").read_text().splitlines()
    return [(r, int(n), int(pid)) for r, n, pid in (ln.split() for ln in lines)]


@pytest.mark.parametrize("mode", [[], ["--one-thread"]], ids=["threads", "one-thread"])
def test_sigkill_inside_a_group_commit_loses_no_committed_step(
    tmp_path: Path, mode: list[str]
) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'runs.db'}")
    app = gc.build(str(tmp_path / "exec.log")).compile(store)
    client = Wayline(store)
    ids = [client.start(app, {"n": 0}, run_id=f"run-{i}") for i in range(RUNS)]

    marker = str(tmp_path / "marker")
    killed = _child(tmp_path, RUNS, "--kill-group", "3", "--marker", marker, *mode)
    try:
        killed.wait(DEADLINE_S)
    finally:
        if killed.poll() is None:
            killed.kill()
    assert killed.returncode == -9, killed.stdout.read() if killed.stdout else ""
    in_flight = {run: step for run, step in json.loads((tmp_path / "marker").read_text())}
    assert len(in_flight) >= 2  # the kill hit a transaction shared by several runs

    committed = {}
    unfinished = 0
    for run_id in ids:
        run = store.get_run("default", run_id)
        assert run is not None
        committed[run_id] = run.step
        unfinished += run.status != "done"
    before = _executions(tmp_path)
    for run_id, n, _ in before:
        # Node n ran, so step n had committed before it: still there after the kill.
        assert committed[run_id] >= n, (run_id, n, committed[run_id])
    for run_id, step in in_flight.items():
        assert committed[run_id] == step - 1  # the killed group's step did not commit
        deltas = store.load_deltas("default", run_id, -1, 100)
        assert [d.step for d in deltas] == list(range(step))

    # It claims each run once the killed worker's lease expires.
    resumed = _child(tmp_path, unfinished, *mode)
    try:
        assert resumed.wait(DEADLINE_S) == 0, resumed.stdout.read() if resumed.stdout else ""
    finally:
        if resumed.poll() is None:
            resumed.kill()

    ran = Counter((r, n) for r, n, _ in _executions(tmp_path))
    twice = {key for key, count in ran.items() if count > 1}
    # Only steps in flight at the kill ran again: node n = committed step, not yet committed.
    assert twice <= {(r, committed[r]) for r in ids}
    assert {(r, s - 1) for r, s in in_flight.items() if s > 0} <= twice  # step 0: input
    assert all(count <= 2 for count in ran.values())
    for run_id in ids:
        assert {n for r, n in ran if r == run_id} == set(range(gc.STEPS))
        run = store.get_run("default", run_id)
        assert run is not None and run.status == "done" and run.step == gc.STEPS
        assert app.get_state({"configurable": {"thread_id": run_id}}).values == {"n": gc.STEPS}
    store.close()
