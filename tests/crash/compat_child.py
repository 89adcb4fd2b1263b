"""A subgraph and an entrypoint for the crash tests of the LangGraph-style APIs, and the
child-process entry point (``python compat_child.py ROLE GRAPH DB LOG [MARKER BLOCK]``).

Every step the outside world would notice (a node or task execution) is appended to the
execution log with fsync before the step goes on, so the log survives SIGKILL.
"""

from __future__ import annotations

import json
import operator
import os
import sys
import threading
from typing import Annotated, Any, TypedDict

import wayline
from wayline.func import entrypoint, task
from wayline.graph import END, START, StateGraph

STEPS = 5
THREAD = "crash-1"


class Parent(TypedDict):
    log: Annotated[list[Any], operator.add]
    total: int


class Child(TypedDict):
    log: Annotated[list[Any], operator.add]
    total: int


def append(path: str, record: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f.read().split("\n")[:-1] if line]
    except FileNotFoundError:
        return []


class Probe:
    def __init__(self, log: str, marker: str | None, block: str | None) -> None:
        self.log, self.marker, self.block = log, marker, block

    def ran(self, name: str) -> None:
        append(self.log, {"pid": os.getpid(), "name": name})
        if name == self.block and self.marker is not None:
            append(self.marker, {"pid": os.getpid(), "name": name})
            threading.Event().wait()  # only SIGKILL ends this process


def subgraph_app(url: str, probe: Probe) -> Any:
    def step(i: int) -> Any:
        def node(state: Child) -> dict[str, Any]:
            probe.ran(f"s{i}")
            return {"log": [f"s{i}"], "total": state["total"] * 3 + i}

        return node

    child = StateGraph(Child)
    for i in range(STEPS):
        child.add_node(f"s{i}", step(i))
        child.add_edge(START if i == 0 else f"s{i - 1}", f"s{i}")
    child.add_edge(f"s{STEPS - 1}", END)

    def prep(state: Parent) -> dict[str, Any]:
        probe.ran("prep")
        return {"log": ["prep"], "total": 1}

    def done(state: Parent) -> dict[str, Any]:
        probe.ran("done")
        return {"log": ["done"]}

    parent = StateGraph(Parent)
    parent.add_node("prep", prep)
    parent.add_node("child", child.compile())
    parent.add_node("done", done)
    parent.add_edge(START, "prep")
    parent.add_edge("prep", "child")
    parent.add_edge("child", "done")
    return parent.compile(wayline.connect(url))


def entrypoint_app(url: str, probe: Probe) -> Any:
    @task
    def work(i: int, acc: int) -> int:
        probe.ran(f"t{i}")
        return acc * 3 + i

    @entrypoint(checkpointer=wayline.connect(url))
    def flow(n: int) -> dict[str, Any]:
        acc = 1
        for i in range(n):
            acc = work(i, acc).result()
        return {"total": acc}

    return flow


def build(kind: str, url: str, probe: Probe) -> Any:
    return subgraph_app(url, probe) if kind == "subgraph" else entrypoint_app(url, probe)


def first_input(kind: str) -> Any:
    return {"log": [], "total": 0} if kind == "subgraph" else STEPS


def main(argv: list[str]) -> None:
    role, kind, db, log, *rest = argv
    marker, block = [*rest, None, None][:2]
    app = build(kind, f"sqlite:///{db}", Probe(log, marker, block))
    config = {"configurable": {"thread_id": THREAD}}
    durability = os.environ.get("WAYLINE_COMPAT_DURABILITY", "sync")
    out = app.invoke(first_input(kind) if role == "run" else None, config, durability=durability)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
