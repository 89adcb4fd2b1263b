"""Child process of ``test_group_crash.py``: a worker at concurrency 4 draining the runs the
parent queued; it SIGKILLs itself inside a group commit when told to.

    python group_child.py DB EXEC_LOG [--kill-group K --marker PATH] [--one-thread]

Every node execution appends ``run n pid`` to EXEC_LOG (fsync'd) before it returns. With
``--kill-group K``, the K-th group transaction carrying two or more runs writes its rows,
then, before its COMMIT, writes (run, step) of every run in it to PATH and kills its own
process with SIGKILL: a crash in the middle of a group commit. ``--one-thread``: the slots
are greenlets on one thread (``WorkerConfig.one_thread``), whose group is every ready run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from typing import Any, TypedDict

import wayline
from wayline import END, START, NodeContext, StateGraph
from wayline.store.sql_store import SQLStore
from wayline.worker.worker import Worker, WorkerConfig

STEPS = 8
LEASE_S = 1.0


class Count(TypedDict):
    n: int


def build(exec_log: str) -> StateGraph:
    def step(state: Count, ctx: NodeContext) -> dict[str, Any]:
        fd = os.open(exec_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, f"{ctx.run_id} {state['n']} {os.getpid()}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return {"n": state["n"] + 1}

    g = StateGraph(Count, name="group_crash")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < STEPS else END)
    return g


def arm_kill(store: SQLStore, k: int, marker: str) -> None:
    """Kill this process inside the K-th multi-run group transaction, before its COMMIT."""
    write = store._write
    seen = [0]

    def write_then_die(db: Any, fenced: Any, now: float) -> None:
        write(db, fenced, now)
        if len(fenced) < 2:
            return
        seen[0] += 1
        if seen[0] == k:
            runs = [[key[1], batch.run.step] for key, _, batch in fenced if batch.run]
            with open(marker, "w") as f:
                json.dump(runs, f)
                f.flush()
                os.fsync(f.fileno())
            os.kill(os.getpid(), signal.SIGKILL)

    store._write = write_then_die  # type: ignore[method-assign]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("exec_log")
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--kill-group", type=int, default=0)
    p.add_argument("--marker", default="")
    p.add_argument("--one-thread", action="store_true")
    args = p.parse_args()
    url = f"sqlite:///{args.db}"
    store = wayline.connect(url)
    app = build(args.exec_log).compile(store)
    if args.kill_group:
        assert isinstance(store, SQLStore)
        arm_kill(store, args.kill_group, args.marker)
    config = WorkerConfig(
        concurrency=4, lease_seconds=LEASE_S, poll_interval=0.02, one_thread=args.one_thread
    )
    Worker(store, app, config).run(max_runs=args.runs)


if __name__ == "__main__":
    main()
