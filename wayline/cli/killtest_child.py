"""The kill test's child process: runs (or resumes) one run of the user's graph, or serves
many as a worker, and writes one line per task start, task finish and completed effect
dispatch to an events file. It can stop dead at the Nth event of a kind: SIGKILL itself
there, or (``--hold``) stand still so the harness can kill the database first. Not a
public interface; ``wayline.cli.killtest`` drives it."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import wayline
from wayline.cli.loading import load_engine
from wayline.graph import probe
from wayline.graph.probe import ProbeEvent

__all__ = ["EventLog", "Target", "load_target", "main", "parse_event"]

Target = Any
"""What a kill test runs: a wayline ``CompiledGraph``, or a LangGraph graph as
``wayline.langgraph.probed.LangGraphKillTarget`` (the same methods: ``with_store``,
``invoke``, ``state_digest``, ``get_state``, ``max_lag_steps``, and ``committed``)."""

FIELDS = ("pid", "kind", "run", "step", "node", "task", "key", "idempotent", "t")
"""``t``: ``time.monotonic()``, one clock for every process on the machine (Linux)."""


class EventLog:
    """The probe: appends each event to a file with one ``write`` (``O_APPEND``), so a line
    is whole or absent after a SIGKILL; the page cache outlives the process, no fsync."""

    def __init__(self, path: str, stop_kind: str | None, stop_at: int, hold: str | None) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.pid = os.getpid()
        self.stop_kind = stop_kind
        self.stop_at = stop_at
        self.hold = hold
        self.seen = 0
        self.lock = threading.Lock()

    def __call__(self, e: ProbeEvent) -> None:
        line = "\t".join(
            str(v) for v in (self.pid, e.kind, e.run_id, e.step, e.node, e.task_id, e.key or "-")
        )
        with self.lock:
            os.write(self.fd, f"{line}\t{int(e.idempotent)}\t{time.monotonic()}\n".encode())
            if e.kind != self.stop_kind:
                return
            self.seen += 1
            if self.seen != self.stop_at:
                return
        if self.hold:  # the harness kills the database, then this process
            Path(self.hold).write_text(str(self.pid))
            threading.Event().wait()
        os.kill(self.pid, signal.SIGKILL)


def parse_event(line: str) -> dict[str, Any] | None:
    parts = line.rstrip("\n").split("\t")
    if len(parts) != len(FIELDS):
        return None  # a torn last line cannot happen with one write, but read defensively
    ev: dict[str, Any] = dict(zip(FIELDS, parts, strict=True))
    ev["pid"], ev["step"] = int(ev["pid"]), int(ev["step"])
    ev["key"] = None if ev["key"] == "-" else ev["key"]
    ev["idempotent"] = ev["idempotent"] == "1"
    ev["t"] = float(ev["t"])
    return ev


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wayline.cli.killtest_child")
    p.add_argument("--graph", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--tenant", default="default")
    p.add_argument("--events", required=True)
    p.add_argument("--stop-kind", choices=["task_start", "task_finish"])
    p.add_argument("--stop-at", type=int, default=0)
    p.add_argument("--hold", help="at the stop event, write this file and stand still")
    p.add_argument("--out", help="write a JSON report here")
    p.add_argument("--run-id")
    p.add_argument("--mode", default="sync", choices=["sync", "async", "exit"])
    p.add_argument("--input", help="JSON input (omit to resume the run)")
    p.add_argument("--worker", action="store_true", help="serve queued runs as a worker")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--lease", type=float, default=1.0)
    p.add_argument("--until-settled", help="worker: stop once these runs (JSON list) settle")
    args = p.parse_args(argv)

    probe.install(EventLog(args.events, args.stop_kind, args.stop_at, args.hold))
    store = wayline.connect(args.db)
    app = load_target(args.graph, store)
    report: dict[str, Any] = {"pid": os.getpid(), "error": None}
    try:
        if args.worker:
            _serve(store, app, args)
        else:
            cfg = {"configurable": {"thread_id": args.run_id, "tenant": args.tenant}}
            inp = None if args.input is None else json.loads(args.input)
            app.invoke(inp, cfg, durability=args.mode)
    except Exception as exc:  # reported, not raised: the harness reads the report
        report["error"] = f"{type(exc).__name__}: {exc}"
    store.close()
    if args.out:
        Path(f"{args.out}.tmp").write_text(json.dumps(report))
        os.replace(f"{args.out}.tmp", args.out)
    return 0 if report["error"] is None else 3


def load_target(spec: str, store: wayline.Store) -> Target:
    """The graph a kill test runs: a wayline graph, or a LangGraph graph run by LangGraph's
    engine the way a worker runs it (leased, every write fenced: ``wayline.langgraph.probed``)."""
    from wayline.worker.engine import WaylineEngine

    engine = load_engine(spec, store)
    if isinstance(engine, WaylineEngine):
        return engine.graph
    from wayline.langgraph.engine import LangGraphEngine
    from wayline.langgraph.probed import LangGraphKillTarget

    assert isinstance(engine, LangGraphEngine)
    return LangGraphKillTarget(engine.graph, name=engine.name, version=engine.version, store=store)


def _serve(store: wayline.Store, app: Any, args: argparse.Namespace) -> None:
    from wayline.client import SETTLED
    from wayline.worker import Worker, WorkerConfig

    config = WorkerConfig(
        concurrency=args.concurrency, lease_seconds=args.lease, poll_interval=0.05
    )
    w = Worker(store, [app], config)
    thread = threading.Thread(target=w.run, name="killtest-worker")
    thread.start()
    try:
        if args.until_settled:
            ids = json.loads(args.until_settled)
            while True:  # the harness bounds this process with its own deadline
                runs = [store.get_run(args.tenant, r) for r in ids]
                if all(r is not None and r.status in SETTLED and r.inbox is None for r in runs):
                    break
                time.sleep(0.05)
        else:
            thread.join()
    finally:
        w.stop()
        thread.join()


if __name__ == "__main__":
    sys.exit(main())
