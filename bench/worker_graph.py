"""Graphs the worker processes of ``bench/workers.py`` serve, loaded as a file:
``wayline worker bench/worker_graph.py:steps`` (or ``:takeover``).

Not a test module and not run directly.

- ``steps`` (graph name ``bench_steps``): one trivial node looping on itself through a
  conditional edge for ``STEPS`` node steps (``{"n": 0}`` in, ``{"n": STEPS}`` out; the run's
  last committed step is ``STEPS``: the input step 0, then node steps 1..STEPS).
- ``takeover`` (graph name ``bench_takeover``): the same loop for ``TAKEOVER_STEPS`` node
  steps, with a side channel. ``$WAYLINE_BENCH_SIDE`` is a directory; every node execution
  appends ``RUN N PID TIME`` (``time.time()`` as the node starts) to ``exec-RUN.log``; and
  if the bench dropped a file ``block-RUN``, the first process that reaches ``n == BLOCK_AT``
  in RUN takes it (an atomic rename), writes ``reached-RUN`` and blocks there until killed.
  The next process to execute ``n == BLOCK_AT`` (the one that took the run over) does not
  block. Because durability is sync, the node at ``n == BLOCK_AT + 1`` starts only after the
  step of ``n == BLOCK_AT`` is durably committed: its start time is the commit time, read
  off the worker's own clock.
- ``queued`` (graph name ``bench_queued``): one node that waits ``WORK_S`` (a stand-in for a
  model call), the queue of ``bench/workers.py``'s takeover-under-a-backlog part.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, TypedDict

import wayline
from wayline import END, START, StateGraph

STEPS = 10
TAKEOVER_STEPS = 4
BLOCK_AT = 2
WORK_S = 0.05


class Count(TypedDict):
    n: int


# -- throughput ---------------------------------------------------------------------------


def _step(state: Count) -> dict[str, Any]:
    return {"n": state["n"] + 1}


def _route(state: Count) -> str:
    return "step" if state["n"] < STEPS else END


def build_steps() -> StateGraph:
    g = StateGraph(Count, name="bench_steps")
    g.add_node("step", _step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", _route)
    return g


steps = build_steps()


# -- takeover -----------------------------------------------------------------------------


def _side() -> Path:
    return Path(os.environ["WAYLINE_BENCH_SIDE"])


def _log_execution(run_id: str, n: int) -> None:
    line = f"{run_id} {n} {os.getpid()} {time.time():.6f}\n"
    with open(_side() / f"exec-{run_id}.log", "a") as f:  # no fsync: the kernel keeps it
        f.write(line)


def _maybe_block(run_id: str) -> None:
    side = _side()
    try:
        os.rename(side / f"block-{run_id}", side / f"blocked-{run_id}-{os.getpid()}")
    except FileNotFoundError:
        return  # nobody asked, or the process that was killed here took the block
    tmp = side / f".reached-{run_id}"
    tmp.write_text(f"{os.getpid()} {time.time():.6f}\n")
    os.rename(tmp, side / f"reached-{run_id}")
    while True:  # until SIGKILL; the worker's heartbeat thread keeps the lease meanwhile
        threading.Event().wait(1.0)


def _takeover_step(state: Count, ctx: wayline.NodeContext) -> dict[str, Any]:
    n = state["n"]
    _log_execution(ctx.run_id, n)
    if n == BLOCK_AT:
        _maybe_block(ctx.run_id)
    return {"n": n + 1}


def _takeover_route(state: Count) -> str:
    return "step" if state["n"] < TAKEOVER_STEPS else END


def build_takeover() -> StateGraph:
    g = StateGraph(Count, name="bench_takeover")
    g.add_node("step", _takeover_step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", _takeover_route)
    return g


takeover = build_takeover()


# -- a queue of work ------------------------------------------------------------------------


def _work(state: Count) -> dict[str, Any]:
    time.sleep(WORK_S)  # a model call's wait, not CPU
    return {"n": state["n"] + 1}


def build_queued() -> StateGraph:
    g = StateGraph(Count, name="bench_queued")
    g.add_node("work", _work)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g


queued = build_queued()
