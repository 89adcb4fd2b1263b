"""Graphs that worker processes in the tests serve (loaded as a file: file.py:counter).

Side channel: ``$WAYLINE_TEST_SIDE`` is a directory where every node execution appends a
line (fsynced, so it survives SIGKILL), the "provider" appends every charge it really makes,
and the test drops control files: ``block-RUN`` asks the first process that reaches n == 3
in RUN to stop there (it writes ``reached-RUN`` and waits for ``go-RUN``).
"""

from __future__ import annotations

import operator
import os
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import wayline
from wayline import END, START, StateGraph

STEPS = 6
BLOCK_AT = 3


class Counter(TypedDict, total=False):
    log: Annotated[list[int], operator.add]
    n: int
    receipt: str


def _side() -> Path:
    return Path(os.environ["WAYLINE_TEST_SIDE"])


def append(name: str, line: str) -> None:
    with open(_side() / name, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def _charge(key: str) -> str:
    append("charges.log", key)
    return f"ch-{key[-6:]}"


def _maybe_block(run_id: str) -> None:
    side = _side()
    try:
        os.rename(side / f"block-{run_id}", side / f"blocked-{run_id}-{os.getpid()}")
    except FileNotFoundError:
        return  # nobody asked, or another process already took the block
    append(f"reached-{run_id}", str(os.getpid()))
    while not (side / f"go-{run_id}").exists():
        threading.Event().wait(0.01)


def step(state: Counter, ctx: wayline.NodeContext) -> dict[str, Any]:
    n = state["n"]
    append("executions.log", f"{ctx.run_id} {n} {os.getpid()}")
    update: dict[str, Any] = {"log": [n], "n": n + 1}
    if n == BLOCK_AT:
        update["receipt"] = ctx.effect("charge", _charge, request={"n": n})
        _maybe_block(ctx.run_id)
    if os.environ.get("WAYLINE_TEST_FAIL") == ctx.run_id:
        raise RuntimeError(f"node failure in {ctx.run_id} at {time.time():.0f}")
    return update


def _route(state: Counter) -> str:
    return "step" if state["n"] < STEPS else END


def build() -> StateGraph:
    g = StateGraph(Counter, name="counter")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", _route)
    return g


counter = build()
