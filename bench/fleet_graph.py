"""The graph ``bench/fleet.py`` drains with workers: ``wayline worker bench/fleet_graph.py:fleet``.

One trivial node looping on itself for ``STEPS`` node steps (``{"n": 0}`` in, ``{"n": STEPS}``
out; with the input step, ``STEPS + 1`` commits a run): 50, the runs issue 31 set its goals
on (128 runs x 50 steps a worker process). Every node execution records
``(run_id, n, time.time())`` as it starts: in ``STARTS`` (in-process workers) and, when
``$WAYLINE_FLEET_LOG`` names a directory, in ``fleet-PID.log`` there (worker processes).
With durability sync a node starts only after the previous step's commit returned, so the
gap between two starts of one run is that run's step latency (commit wait included).

Not a test module and not run directly.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, TypedDict

from wayline import END, START, NodeContext, StateGraph

STEPS = 50
STARTS: list[tuple[str, int, float]] = []
_LOG_DIR = os.environ.get("WAYLINE_FLEET_LOG")
_log_lock = threading.Lock()
_log_fd: int | None = None


class Count(TypedDict):
    n: int


def _record(run_id: str, n: int) -> None:
    global _log_fd
    now = time.time()
    STARTS.append((run_id, n, now))
    if _LOG_DIR:
        with _log_lock:
            if _log_fd is None:
                path = os.path.join(_LOG_DIR, f"fleet-{os.getpid()}.log")
                _log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(_log_fd, f"{run_id} {n} {now:.6f}\n".encode())


def _step(state: Count, ctx: NodeContext) -> dict[str, Any]:
    _record(ctx.run_id, state["n"])
    return {"n": state["n"] + 1}


def _paying_step(state: Count, ctx: NodeContext) -> dict[str, Any]:
    """A step with one effect (a local call: the cost is the ledger's two durable records)."""
    _record(ctx.run_id, state["n"])
    ctx.effect("charge", lambda key: key[-8:], request={"n": state["n"]}, idempotent=True)
    return {"n": state["n"] + 1}


def build(steps: int = STEPS, *, effect: bool = False) -> StateGraph:
    g = StateGraph(Count, name="bench_fleet_effects" if effect else "bench_fleet")
    g.add_node("step", _paying_step if effect else _step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < steps else END)
    return g


fleet = build()
effects = build(effect=True)
"""The same loop with an effect in every node step (``bench/fleet.py``'s effect cells)."""
