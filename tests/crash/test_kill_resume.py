"""SIGKILL a real process mid-run, resume in a fresh one, and count what ran twice.

Kill points are deterministic: the child's node appends a marker line (fsync'd) and blocks
forever; the parent polls for the marker with a deadline, then SIGKILLs. Every node
execution is logged (fsync'd) by the child, so the executions before the kill are counted
even though the process that ran them is gone.

Linear graph: ``step`` runs 30 times (node n sees ``n`` and writes ``n + 1``; node n is
superstep n + 1, superstep 0 is the input), snapshots every 5 steps.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import child_graph as cg
import pytest
from crash_harness import CrashRun, run_baseline

import wayline
from wayline.store.writer import AsyncSink

pytestmark = pytest.mark.crash

STEPS = cg.LINEAR_STEPS
KILL_AT = 17
"""Node n=17 (superstep 18) blocks and is killed: steps 0..17 are committed under sync."""
STALL_AT = 12
MAX_LAG_STEPS = inspect.signature(AsyncSink.__init__).parameters["max_lag_steps"].default


def linear_prefix(step: int) -> dict[str, Any]:
    """The state after committed superstep ``step`` of the linear graph."""
    if step == 0:
        return dict(cg.LINEAR_INPUT)
    return cg.expected_linear(step)


def assert_finished_like(
    final: dict[str, Any], baseline: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert baseline["values"] == expected, "uninterrupted run is wrong; nothing to compare to"
    assert final["result"] == baseline["result"]
    assert final["values"] == baseline["values"]
    assert final["status"] == "done"
    assert final["next"] == []
    assert final["step"] == baseline["step"]
    assert final["committed_digest"] is not None
    assert final["committed_digest"] == final["reconstructed_digest"]
    assert final["committed_digest"] == baseline["committed_digest"]


@pytest.mark.parametrize("mode", ["sync", "exit"])
def test_a_start_killed_inside_its_first_commit_leaves_no_row(
    crash_run: Callable[[str, str], CrashRun], tmp_path: Path, mode: str
) -> None:
    """The run's row and its input step are one transaction: killed with the row inserted
    and nothing committed, the store holds no run at all (not a row without its input,
    which nothing could continue), and starting the thread again runs it whole."""
    run = crash_run("linear", mode)
    proc = run.start("--block-in-start")
    marker = run.wait_for_marker(proc)
    assert marker == {"pid": proc.pid, "event": "in_start", "run": run.thread}
    run.sigkill(proc)
    assert run.executions() == [], "no node ran: the kill came before the first step"
    store = wayline.connect(run.url)
    assert store.get_run("default", run.thread) is None
    assert store.list_runs("default") == []
    store.close()

    again = run.start(label="again")
    assert again.wait(timeout=60) == 0, run.stderr("again")
    assert [n for _, n in run.executions("again")] == list(range(STEPS))
    baseline, _ = run_baseline(tmp_path, "linear", mode)
    final = run.durable()
    assert final["values"] == baseline["values"] == cg.expected_linear()
    assert final["committed_digest"] == baseline["committed_digest"]
    assert final["step"] == STEPS


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_linear_kill_and_resume(
    crash_run: Callable[[str, str], CrashRun], tmp_path: Path, mode: str
) -> None:
    run = crash_run("linear", mode)
    proc = run.start("--block-node", "step", "--block-at", str(KILL_AT))
    marker = run.wait_for_marker(proc)
    assert marker == {"pid": proc.pid, "event": "blocked", "node": "step", "n": KILL_AT}
    run.sigkill(proc)

    first = [n for _, n in run.executions("run")]
    assert first == list(range(KILL_AT + 1)), "the killed process ran each step once, in order"

    # What the store holds after the kill is a consistent prefix of the run.
    held = run.durable()
    committed = held["step"]
    assert held["status"] == "running"
    assert held["values"] == linear_prefix(committed)
    assert held["next"] == ["step"]
    if mode == "sync":
        assert committed == KILL_AT, "sync: every completed step was durable"
    elif mode == "async":
        assert KILL_AT - MAX_LAG_STEPS <= committed <= KILL_AT
    else:
        assert committed == 0, "exit: only the input step is durable before the end"

    final = run.resume()
    again = [n for _, n in run.executions("resume")]
    assert again == list(range(committed, STEPS)), "resume starts at the committed step"

    counts = Counter(n for _, n in run.executions())
    assert set(counts) == set(range(STEPS))
    assert max(counts.values()) <= 2, "no step ran more than twice"
    replayed = sorted(n for n, c in counts.items() if c == 2)
    if mode == "sync":
        assert replayed == [KILL_AT], "sync: only the in-flight step runs again"
    elif mode == "async":
        assert 1 <= len(replayed) <= MAX_LAG_STEPS + 1
        assert replayed == list(range(KILL_AT - len(replayed) + 1, KILL_AT + 1))
    else:
        assert replayed == list(range(KILL_AT + 1)), "exit: re-execution starts from step 1"

    baseline, base_runs = run_baseline(tmp_path, "linear", mode)
    assert [n for _, n in base_runs] == list(range(STEPS))
    assert_finished_like(final, baseline, cg.expected_linear())
    assert final["step"] == STEPS
    assert run.durable()["values"] == final["values"], "what resume returned is what is stored"


@pytest.mark.parametrize("mode", ["sync", "exit"])
def test_linear_killed_twice(
    crash_run: Callable[[str, str], CrashRun], tmp_path: Path, mode: str
) -> None:
    """Kill the first run at node KILL_AT, kill its resume at node KILL_AT + 6, resume
    again: the second crash costs what the first did, nothing is lost or doubled.
    (async is left out to keep the module fast: its window is covered above.)"""
    second_kill = KILL_AT + 6
    run = crash_run("linear", mode)
    proc = run.start("--block-node", "step", "--block-at", str(KILL_AT))
    assert run.wait_for_marker(proc)["n"] == KILL_AT
    run.sigkill(proc)
    first_committed = run.durable()["step"]

    proc = run.start(
        "--block-node", "step", "--block-at", str(second_kill), role="resume", label="resume1"
    )
    marker = run.wait_for_marker(proc)
    assert (marker["event"], marker["n"]) == ("blocked", second_kill)
    run.sigkill(proc)
    assert run.executions("resume1") == [
        ("step", n) for n in range(first_committed, second_kill + 1)
    ]

    held = run.durable()
    committed = held["step"]
    assert held["values"] == linear_prefix(committed)
    if mode == "sync":
        assert (first_committed, committed) == (KILL_AT, second_kill)
    else:
        assert (first_committed, committed) == (0, 0)

    final = run.resume()
    assert run.executions("resume") == [("step", n) for n in range(committed, STEPS)]
    counts = Counter(n for _, n in run.executions())
    expected = Counter(range(KILL_AT + 1))
    expected.update(range(first_committed, second_kill + 1))
    expected.update(range(committed, STEPS))
    assert counts == expected
    if mode == "sync":
        assert sorted(n for n, c in counts.items() if c > 1) == [KILL_AT, second_kill]

    baseline, _ = run_baseline(tmp_path, "linear", mode)
    assert_finished_like(final, baseline, cg.expected_linear())


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_stalled_store_bounds_what_a_kill_costs(
    crash_run: Callable[[str, str], CrashRun], tmp_path: Path, mode: str
) -> None:
    """At node n=STALL_AT, once what the mode has submitted is durable, the child takes
    SQLite's write lock on a second connection and keeps it: no commit can land any more.
    The loop runs on until a commit sink holds it back; a watchdog in the child reports
    where (by the main thread's frames), and the parent kills. So each mode's promise is
    tested at its limit, not only when the writer happens to keep up:
    sync runs no step past a commit that is not durable; async runs exactly
    ``max_lag_steps`` ahead at most; exit runs to the end and commits only there."""
    durable_before = 0 if mode == "exit" else STALL_AT
    run = crash_run("linear", mode)
    proc = run.start("--stall-at", str(STALL_AT), "--stall-durable", str(durable_before))
    marker = run.wait_for_marker(proc)
    assert marker["event"] == "writer_stalled", marker
    run.sigkill(proc)

    first = [n for _, n in run.executions("run")]
    ran_to = first[-1]
    assert first == list(range(ran_to + 1))
    if mode == "sync":
        assert (marker["sink"], marker["where"]) == ("SyncSink", "submit")
        assert ran_to == STALL_AT, "sync: no step starts before the previous one is durable"
    elif mode == "async":
        assert (marker["sink"], marker["where"]) == ("AsyncSink", "submit"), (
            "async: the loop must wait for its writer, not run on to the end"
        )
        assert marker["max_lag_steps"] == MAX_LAG_STEPS
        # Steps of nodes STALL_AT..ran_to-1 are queued; node ran_to's step waits to be.
        assert marker["unflushed"] == ran_to - STALL_AT
        assert 1 <= marker["unflushed"] <= MAX_LAG_STEPS
    else:
        assert (marker["sink"], marker["where"]) == ("ExitSink", "flush")
        assert ran_to == STEPS - 1, "exit: the run goes to the end without the store"

    held = run.durable()
    assert held["step"] == durable_before
    assert held["status"] == "running"
    assert held["values"] == linear_prefix(durable_before)

    final = run.resume()
    assert [n for _, n in run.executions("resume")] == list(range(durable_before, STEPS))
    counts = Counter(n for _, n in run.executions())
    assert set(counts) == set(range(STEPS))
    assert max(counts.values()) == 2
    replayed = sorted(n for n, c in counts.items() if c == 2)
    assert replayed == list(range(durable_before, ran_to + 1))
    if mode == "sync":
        assert replayed == [STALL_AT]
    elif mode == "async":
        assert len(replayed) == marker["unflushed"] + 1 <= MAX_LAG_STEPS + 1
    else:
        assert replayed == list(range(STEPS))

    baseline, _ = run_baseline(tmp_path, "linear", mode)
    assert_finished_like(final, baseline, cg.expected_linear())


@pytest.mark.parametrize("shape", cg.FANOUT_SHAPES)
def test_parallel_peer_writes_survive_kill(
    crash_run: Callable[[str, str], CrashRun], tmp_path: Path, shape: str
) -> None:
    """Peers a, b, c run in one superstep; a and c finish, b blocks once their writes are
    durable as pending writes. After the kill only b runs again (sync durability)."""
    fan_n = 0 if shape == "start_fanout" else 1  # the n every peer sees
    fan_step = fan_n + 1  # the superstep the peers run in
    run = crash_run(shape, "sync")
    proc = run.start("--block-node", cg.BLOCKING_PEER, "--block-at", str(fan_n))
    marker = run.wait_for_marker(proc)
    assert marker == {
        "pid": proc.pid,
        "event": "blocked",
        "node": "b",
        "n": fan_n,
        "peers_saved": True,
    }, "the finished peers' writes never became durable"
    run.sigkill(proc)

    head = [] if shape == "start_fanout" else [("first", 0)]
    first = run.executions("run")
    assert first[: len(head)] == head
    assert sorted(first[len(head) :]) == [("a", fan_n), ("b", fan_n), ("c", fan_n)]

    held = run.durable()
    assert held["step"] == fan_step - 1
    assert held["status"] == "running"
    # the fan-out step is planned; a and c hold durable pending writes, b has none
    assert held["tasks"] == {"a": {"log": ["a"]}, "b": None, "c": {"log": ["c"]}}
    assert "b" in held["next"] and set(held["next"]) <= set(cg.FAN_PEERS)

    final = run.resume()
    assert run.executions("resume") == [("b", fan_n), ("join", fan_n)]
    counts = Counter(node for node, _ in run.executions())
    expected_counts = {"a": 1, "b": 2, "c": 1, "join": 1}
    if shape == "node_fanout":
        expected_counts["first"] = 1
    assert counts == expected_counts

    baseline, base_runs = run_baseline(tmp_path, shape, "sync")
    assert Counter(node for node, _ in base_runs) == {**expected_counts, "b": 1}
    assert_finished_like(final, baseline, cg.expected_fanout(shape))
    assert final["step"] == fan_step + 1


def test_parallel_second_kill_keeps_pending_writes(
    crash_run: Callable[[str, str], CrashRun], tmp_path: Path
) -> None:
    """Kill during the fan-out step, then kill the resume there again (b blocks again):
    the pending writes of a and c survive both crashes; a and c run once, b three times."""
    shape, fan_n = "node_fanout", 1
    run = crash_run(shape, "sync")
    block = ("--block-node", cg.BLOCKING_PEER, "--block-at", str(fan_n))
    proc = run.start(*block)
    assert run.wait_for_marker(proc)["peers_saved"] is True
    run.sigkill(proc)

    proc = run.start(*block, role="resume", label="resume1")
    marker = run.wait_for_marker(proc)
    assert marker["event"] == "blocked" and marker["peers_saved"] is True
    run.sigkill(proc)
    assert run.executions("resume1") == [("b", fan_n)]

    held = run.durable()
    assert held["step"] == fan_n
    assert held["tasks"] == {"a": {"log": ["a"]}, "b": None, "c": {"log": ["c"]}}

    final = run.resume()
    assert run.executions("resume") == [("b", fan_n), ("join", fan_n)]
    counts = Counter(node for node, _ in run.executions())
    assert counts == {"first": 1, "a": 1, "b": 3, "c": 1, "join": 1}

    baseline, _ = run_baseline(tmp_path, shape, "sync")
    assert_finished_like(final, baseline, cg.expected_fanout(shape))
