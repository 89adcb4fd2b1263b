"""Graphs and the child-process entry point for the crash tests.

The parent test imports this module for the uninterrupted baseline and to read the store
after a kill; child processes run it as a script (``python child_graph.py run ...``).

Side channels, all JSON lines appended with flush + fsync so they survive SIGKILL:
- the execution log: one line per node execution (``role``, ``pid``, ``node``, ``n``);
- the marker file: one line when the child reaches its kill point (and then blocks).
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import wayline
from wayline import END, START, StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.store.writer import AsyncSink, CommitSink

LINEAR_STEPS = 30
ACC_MOD = 1_000_003
FANOUT_SHAPES = ("start_fanout", "node_fanout")
CHILD_WAIT_S = 8.0
"""How long a child waits on a durable condition before it reports failure. Shorter than
SQLite's 10 s busy timeout, so a stalled writer has not given up yet."""

_append_lock = threading.Lock()


def append_line(path: str, record: dict[str, Any]) -> None:
    """Append one JSON line durably: it is on disk before this returns."""
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    with _append_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def read_lines(path: str) -> list[dict[str, Any]]:
    """Complete JSON lines of a side-channel file (a torn last line is ignored)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.split("\n")[:-1] if line]


def block_forever() -> None:
    threading.Event().wait()  # never set: only SIGKILL ends this process


class Probe:
    """What a node tells the outside world, and where it stops."""

    def __init__(
        self,
        *,
        role: str,
        exec_log: str,
        label: str | None = None,
        marker: str | None = None,
        block_node: str | None = None,
        block_at: int | None = None,
        stall_at: int | None = None,
        stall_durable: int | None = None,
        db_path: str | None = None,
    ) -> None:
        self.role = role
        self.label = label or role
        self.exec_log = exec_log
        self.marker = marker
        self.block_node = block_node
        self.block_at = block_at
        self.stall_at = stall_at
        self.stall_durable = stall_at if stall_durable is None else stall_durable
        self.db_path = db_path
        self.app: wayline.CompiledGraph | None = None
        self.cfg: dict[str, Any] | None = None
        self._stall_conn: sqlite3.Connection | None = None

    def executed(self, node: str, n: int) -> None:
        append_line(
            self.exec_log,
            {"role": self.role, "label": self.label, "pid": os.getpid(), "node": node, "n": n},
        )

    def mark(self, **record: Any) -> None:
        assert self.marker is not None
        append_line(self.marker, {"pid": os.getpid(), **record})

    def maybe_block(self, node: str, n: int, **extra: Any) -> None:
        if self.block_at is not None and node == self.block_node and n == self.block_at:
            self.mark(event="blocked", node=node, n=n, **extra)
            block_forever()

    # -- the stalled-store scenario -----------------------------------------------------

    def maybe_stall_writer(self, n: int) -> None:
        """At ``stall_at``: wait until the store's committed step is ``stall_durable`` (all
        that the mode has submitted so far), then take SQLite's write lock on a second
        connection and keep it, so that no commit of this run can land any more. A watchdog
        reports once the loop waits on a commit sink: it has gone as far as it will."""
        if self.stall_at is None or n != self.stall_at:
            return
        assert self.app is not None and self.cfg is not None and self.db_path is not None
        deadline = time.monotonic() + CHILD_WAIT_S
        while (step := self.app.get_state(self.cfg).metadata["step"]) != self.stall_durable:
            if time.monotonic() > deadline:
                self.mark(event="not_durable", n=n, step=step)
                block_forever()
            time.sleep(0.002)
        conn = sqlite3.connect(self.db_path, isolation_level=None, timeout=CHILD_WAIT_S)
        conn.execute("BEGIN IMMEDIATE")
        self._stall_conn = conn  # held until the process dies
        main = threading.get_ident()
        threading.Thread(target=self._watch, args=(main, n), daemon=True).start()

    def _watch(self, main_ident: int, stalled_at: int) -> None:
        """Report when the main thread waits inside a sink's ``submit`` or ``flush`` (on the
        async writer, or on SQLite's lock): with the lock held here it cannot leave."""
        deadline = time.monotonic() + CHILD_WAIT_S
        while time.monotonic() < deadline:
            parked = _parked_in_sink(sys._current_frames().get(main_ident))
            if parked is not None:
                where, sink = parked
                self.mark(
                    event="writer_stalled",
                    where=where,
                    sink=type(sink).__name__,
                    stalled_at=stalled_at,
                    unflushed=sink.unflushed() if hasattr(sink, "unflushed") else None,
                    max_lag_steps=getattr(sink, "max_lag_steps", None),
                )
                return
            time.sleep(0.002)
        self.mark(event="watchdog_timeout", stalled_at=stalled_at)


def _parked_in_sink(frame: Any) -> tuple[str, Any] | None:
    """(function, sink) if the main thread is inside a commit sink's ``submit`` or ``flush``
    and so cannot get on while the write lock is held here: any sink that commits in the
    caller's thread will block on the lock; an AsyncSink only once it waits for its writer
    (innermost frame ``Condition.wait``), not while it is merely queueing a batch."""
    innermost = frame
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith(os.path.join("store", "writer.py")) and code.co_name in (
            "submit",
            "flush",
        ):
            sink = frame.f_locals.get("self")
            if not isinstance(sink, CommitSink):
                return None
            if isinstance(sink, AsyncSink) and innermost.f_code.co_name != "wait":
                return None
            return code.co_name, sink
        frame = frame.f_back
    return None


# -- the linear graph ---------------------------------------------------------------------


class LinearState(TypedDict):
    log: Annotated[list[Any], operator.add]
    n: int
    acc: int


LINEAR_INPUT: dict[str, Any] = {"log": [], "n": 0, "acc": 1}


def expected_linear(steps: int = LINEAR_STEPS) -> dict[str, Any]:
    acc = 1
    for n in range(steps):
        acc = (acc * 31 + n) % ACC_MOD
    return {"log": [n * n for n in range(steps)], "n": steps, "acc": acc}


def build_linear(db_url: str, probe: Probe | None, *, snapshot_every: int = 5) -> CompiledGraph:
    def step(state: LinearState) -> dict[str, Any]:
        n = state["n"]
        if probe is not None:
            probe.executed("step", n)
            probe.maybe_stall_writer(n)
            probe.maybe_block("step", n)
        return {"log": [n * n], "n": n + 1, "acc": (state["acc"] * 31 + n) % ACC_MOD}

    def route(state: LinearState) -> str:
        return END if state["n"] >= LINEAR_STEPS else "step"

    g = StateGraph(LinearState, name="crash_linear")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", route)
    return g.compile(wayline.connect(db_url), snapshot_every=snapshot_every)


# -- the fan-out graph --------------------------------------------------------------------


class FanState(TypedDict):
    log: Annotated[list[Any], operator.add]
    n: int


FAN_INPUT: dict[str, Any] = {"log": ["input"], "n": 0}
FAN_PEERS = ("a", "b", "c")
BLOCKING_PEER = "b"


def expected_fanout(shape: str) -> dict[str, Any]:
    head = ["input"] if shape == "start_fanout" else ["input", "first"]
    # peers fold in a deterministic order whatever order they finished in
    log = [*head, *FAN_PEERS]
    return {"log": [*log, f"join:{len(log)}"], "n": len(head)}


def build_fanout(
    db_url: str, probe: Probe | None, shape: str, *, snapshot_every: int = 5
) -> CompiledGraph:
    """``shape`` start_fanout: START -> a, b, c; node_fanout: START -> first -> a, b, c.
    Then [a, b, c] -> join -> END. ``b`` blocks (in the killed child) once the writes of
    its finished peers are durable as pending writes."""
    if shape not in FANOUT_SHAPES:
        raise ValueError(shape)

    def peer(name: str) -> Callable[[FanState], dict[str, Any]]:
        def run(state: FanState) -> dict[str, Any]:
            if probe is not None:
                probe.executed(name, state["n"])
                if name == BLOCKING_PEER and probe.block_at is not None:
                    saved = _wait_peers_saved(probe)
                    probe.maybe_block(name, state["n"], peers_saved=saved)
            return {"log": [name]}

        return run

    def first(state: FanState) -> dict[str, Any]:
        if probe is not None:
            probe.executed("first", state["n"])
        return {"log": ["first"], "n": state["n"] + 1}

    def join(state: FanState) -> dict[str, Any]:
        if probe is not None:
            probe.executed("join", state["n"])
        return {"log": [f"join:{len(state['log'])}"], "n": state["n"] + 1}

    g = StateGraph(FanState, name=f"crash_{shape}")
    for name in FAN_PEERS:
        g.add_node(name, peer(name))
    g.add_node("join", join)
    if shape == "node_fanout":
        g.add_node("first", first)
        g.add_edge(START, "first")
        src = "first"
    else:
        src = START
    for name in FAN_PEERS:
        g.add_edge(src, name)
    g.add_edge(list(FAN_PEERS), "join")
    g.add_edge("join", END)
    return g.compile(wayline.connect(db_url), snapshot_every=snapshot_every)


def _wait_peers_saved(probe: Probe) -> bool:
    """Wait until every other peer's writes of this superstep are durable (visible through
    ``get_state().tasks`` of the committed step). False if they never become so."""
    assert probe.app is not None and probe.cfg is not None
    others = set(FAN_PEERS) - {BLOCKING_PEER}
    deadline = time.monotonic() + CHILD_WAIT_S
    while time.monotonic() < deadline:
        tasks = probe.app.get_state(probe.cfg).tasks
        if {t.name for t in tasks if t.result is not None} >= others:
            return True
        time.sleep(0.002)
    return False


# -- running ------------------------------------------------------------------------------


def block_in_start(app: CompiledGraph, probe: Probe) -> None:
    """Stop inside the transaction that creates the run with its input step, right after
    the run's row went in and before anything is committed."""
    store: Any = app.store
    create = store._create

    def blocking(db: Any, tenant_id: str, run_id: str, batch: Any) -> None:
        create(db, tenant_id, run_id, batch)
        if batch.create is not None:
            probe.mark(event="in_start", run=run_id)
            block_forever()

    store._create = blocking


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 10_000}


def build(graph: str, db_url: str, probe: Probe | None) -> CompiledGraph:
    if graph == "linear":
        return build_linear(db_url, probe)
    return build_fanout(db_url, probe, graph)


def graph_input(graph: str) -> dict[str, Any]:
    return dict(LINEAR_INPUT) if graph == "linear" else dict(FAN_INPUT)


def report(app: Any, cfg: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    """The run as the store holds it (and as invoke returned it), JSON-ready."""
    state = app.get_state(cfg)
    run = app.store.get_run("default", cfg["configurable"]["thread_id"])
    return {
        "result": result,
        "values": state.values,
        "next": list(state.next),
        "step": state.metadata["step"],
        "status": state.read_info.status,
        "committed_digest": run.state_digest if run is not None else None,
        "reconstructed_digest": app.state_digest(cfg) if run is not None else None,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["run", "resume"])
    p.add_argument("--graph", required=True, choices=["linear", *FANOUT_SHAPES])
    p.add_argument("--db", required=True, help="absolute path of the SQLite file")
    p.add_argument("--thread", required=True)
    p.add_argument("--mode", required=True, choices=["sync", "async", "exit"])
    p.add_argument("--exec-log", required=True)
    p.add_argument("--label", help="tags this process's executions (default: the role)")
    p.add_argument("--marker")
    p.add_argument("--block-node")
    p.add_argument("--block-at", type=int)
    p.add_argument("--stall-at", type=int)
    p.add_argument("--stall-durable", type=int)
    p.add_argument(
        "--block-in-start",
        action="store_true",
        help="block inside the commit that creates the run, after its row is inserted",
    )
    p.add_argument("--out")
    args = p.parse_args(argv)

    probe = Probe(
        role=args.role,
        exec_log=args.exec_log,
        label=args.label,
        marker=args.marker,
        block_node=args.block_node,
        block_at=args.block_at,
        stall_at=args.stall_at,
        stall_durable=args.stall_durable,
        db_path=args.db,
    )
    app = build(args.graph, f"sqlite:///{args.db}", probe)
    cfg = config(args.thread)
    probe.app, probe.cfg = app, cfg
    if args.block_in_start:
        block_in_start(app, probe)
    inp = graph_input(args.graph) if args.role == "run" else None
    result = app.invoke(inp, cfg, durability=args.mode)
    if args.out:
        with open(args.out + ".tmp", "w", encoding="utf-8") as f:
            json.dump(report(app, cfg, result), f)
        os.replace(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
