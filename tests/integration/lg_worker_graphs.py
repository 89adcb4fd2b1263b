"""LangGraph graphs that worker processes in the tests serve (``file.py:counter``), written
as LangGraph would write them: ``langgraph`` imports, ``wayline.langgraph.effect`` for the
charge.

The side channel is ``worker_graphs``'s: ``$WAYLINE_TEST_SIDE`` collects every node
execution (fsynced) and every charge the provider really makes; ``block-RUN`` stops the
first process that reaches n == 3 in RUN (it writes ``reached-RUN`` and waits for
``go-RUN``; ``greeting`` blocks the same way in its one node); ``kill-RUN`` makes the
provider's process SIGKILL itself right after it committed the charge; ``blind-RUN``
leaves the charge without ``reconcile``.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import signal
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.config import get_config
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from wayline.effects import NOT_FOUND
from wayline.langgraph import effect

STEPS = 6
BLOCK_AT = 3


class Counter(TypedDict, total=False):
    log: Annotated[list[int], operator.add]
    n: int
    receipt: str
    decision: Any


def _side() -> Path:
    return Path(os.environ["WAYLINE_TEST_SIDE"])


def append(name: str, line: str) -> None:
    with open(_side() / name, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def _charge(key: str) -> str:
    append("charges.log", key)
    thread = get_config()["configurable"]["thread_id"]
    if _take(f"kill-{thread}"):  # the provider committed; the worker dies before it records
        os.kill(os.getpid(), signal.SIGKILL)
    return f"ch-{key[-6:]}"


def _reconcile(key: str) -> Any:
    """The provider's own record of a charge (a kill after it committed leaves it there)."""
    path = _side() / "charges.log"
    charged = path.exists() and key in path.read_text().split()
    return f"ch-{key[-6:]}" if charged else NOT_FOUND


def _take(name: str) -> bool:
    """Take a control file: only the first process to get here sees it."""
    side = _side()
    try:
        os.rename(side / name, side / f"{name}-taken-{os.getpid()}")
    except FileNotFoundError:
        return False
    return True


def _maybe_block(thread: str) -> None:
    if not _take(f"block-{thread}"):
        return
    append(f"reached-{thread}", str(os.getpid()))
    while not (_side() / f"go-{thread}").exists():
        threading.Event().wait(0.01)


def step(state: Counter) -> dict[str, Any]:
    thread = get_config()["configurable"]["thread_id"]
    n = state["n"]
    append("executions.log", f"{thread} {n} {os.getpid()}")
    update: dict[str, Any] = {"log": [n], "n": n + 1}
    if n == BLOCK_AT:
        blind = (_side() / f"blind-{thread}").exists()  # no way to ask the provider
        reconcile = None if blind else _reconcile
        update["receipt"] = effect("charge", _charge, request={"n": n}, reconcile=reconcile)
        _maybe_block(thread)
    return update


def _route(state: Counter) -> str:
    return "step" if state["n"] < STEPS else END


def build() -> StateGraph[Counter]:
    g = StateGraph(Counter)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", _route)
    return g


counter = build().compile(name="lg_counter")


def propose(state: Counter) -> dict[str, Any]:
    return {"log": [state.get("n", 0)], "n": state.get("n", 0) + 1}


def review(state: Counter) -> dict[str, Any]:
    decision = interrupt({"refund": state["n"] * 10})
    return {"decision": decision, "log": [100]}


def build_approval() -> StateGraph[Counter]:
    g = StateGraph(Counter)
    g.add_node("propose", propose)
    g.add_node("review", review)
    g.add_edge(START, "propose")
    g.add_edge("propose", "review")
    g.add_edge("review", END)
    return g


approval = build_approval().compile(name="lg_approval")


@task
def double(x: int) -> int:
    return x * 2


@entrypoint()
def doubling(n: int) -> dict[str, Any]:
    """A functional-API workflow: a task, then a question."""
    doubled = double(n).result()
    answer = interrupt({"doubled": doubled})
    return {"doubled": doubled, "answer": answer}


@dataclasses.dataclass
class Tone:
    tone: str = "plain"


class Greeting(TypedDict, total=False):
    said: Annotated[list[str], operator.add]


def greet(state: Greeting, runtime: Runtime[Tone]) -> dict[str, Any]:
    """Says whom (the run's ``configurable.user``) in which tone (its context) it greets."""
    config = get_config()
    thread = config["configurable"]["thread_id"]
    append("executions.log", f"{thread} 0 {os.getpid()}")
    _maybe_block(thread)
    user = config["configurable"].get("user", "nobody")
    return {"said": [f"{user}/{runtime.context.tone}"]}


def build_greeting() -> StateGraph[Greeting, Tone]:
    g = StateGraph(Greeting, context_schema=Tone)
    g.add_node("greet", greet)
    g.add_edge(START, "greet")
    g.add_edge("greet", END)
    return g


greeting = build_greeting().compile(name="lg_greeting")
