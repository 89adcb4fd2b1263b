"""Graphs for the wake-up tests (loaded as a file by worker processes: file.py:sleeper).

Side channel: ``$WAYLINE_TEST_SIDE`` is a directory where every node execution appends a
line (fsynced, so it survives SIGKILL): ``<run> <node> <pid> <time>``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, TypedDict

import wayline
from wayline import END, START, OnExpire, StateGraph, interrupt


class Nap(TypedDict, total=False):
    seconds: float
    woke_at: float
    after: int
    decision: Any
    path: str


def note(run_id: str, node: str) -> None:
    side = os.environ.get("WAYLINE_TEST_SIDE")
    if not side:
        return
    with open(Path(side) / "executions.log", "a") as f:
        f.write(f"{run_id} {node} {os.getpid()} {time.time():.6f}\n")
        f.flush()
        os.fsync(f.fileno())


def nap(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
    note(ctx.run_id, "nap")
    if state.get("seconds"):
        ctx.sleep(state["seconds"])
    return {"woke_at": time.time()}


def after(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
    note(ctx.run_id, "after")
    return {"after": state.get("after", 0) + 1}


def build_sleeper() -> StateGraph:
    g = StateGraph(Nap, name="sleeper")
    g.add_node("nap", nap)
    g.add_node("after", after)
    g.add_edge(START, "nap")
    g.add_edge("nap", "after")
    g.add_edge("after", END)
    return g


sleeper = build_sleeper()


def approval_graph(on_expire: OnExpire | None, expires_in: float) -> StateGraph:
    """ask -> done, with an approval that expires into ``on_expire``; ``fallback`` is
    where ``OnExpire.goto("fallback")`` continues."""

    def ask(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
        note(ctx.run_id, "ask")
        kwargs: dict[str, Any] = {"approvers": ["finance"], "expires_in": expires_in}
        if on_expire is not None:
            kwargs["on_expire"] = on_expire
        decision = interrupt({"refund": 5}, **kwargs)
        return {"decision": decision, "path": "decided"}

    def fallback(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
        note(ctx.run_id, "fallback")
        return {"path": "fallback"}

    g = StateGraph(Nap, name="approval")
    g.add_node("ask", ask)
    g.add_node("fallback", fallback)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    g.add_edge("fallback", END)
    return g


def _block_first_fire(schedule_id: str, tick: float) -> None:
    """Inside a schedule's fire transaction: the first process to find ``block-fire`` in
    the side directory says so (``firing-<pid>``) and waits there to be SIGKILLed."""
    side = Path(os.environ["WAYLINE_TEST_SIDE"])
    try:
        os.rename(side / "block-fire", side / f"took-fire-{os.getpid()}")
    except FileNotFoundError:
        return
    (side / f"firing-{os.getpid()}").write_text(f"{schedule_id} {tick}")
    while True:
        time.sleep(0.05)


if os.environ.get("WAYLINE_TEST_SIDE"):
    from wayline.store import schedules as _schedules

    _schedules.FIRE_HOOK = _block_first_fire


def _prepare(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
    """Before the approval: the first process to find ``block-prepare`` waits here (to be
    SIGKILLed); the others go on."""
    note(ctx.run_id, "prepare")
    side = Path(os.environ.get("WAYLINE_TEST_SIDE", "."))
    try:
        os.rename(side / "block-prepare", side / f"took-prepare-{os.getpid()}")
    except FileNotFoundError:
        return {}
    (side / f"preparing-{os.getpid()}").write_text(ctx.run_id)
    while True:
        time.sleep(0.05)


def _ask_finance(state: Nap, ctx: wayline.NodeContext) -> dict[str, Any]:
    note(ctx.run_id, "ask")
    return {"decision": interrupt({"refund": 5}, approvers=["finance"])}


def build_notified() -> StateGraph:
    g = StateGraph(Nap, name="notified")
    g.add_node("prepare", _prepare)
    g.add_node("ask", _ask_finance)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "ask")
    g.add_edge("ask", END)
    return g


notified = build_notified()
