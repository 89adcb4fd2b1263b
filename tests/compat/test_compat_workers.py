"""A graph with a subgraph served by a worker: the child's question parks the parent run,
a resume through the client reaches the child, and no worker claims the child run itself
(its graph name, ``parent::child``, is one no worker serves)."""

from __future__ import annotations

import operator
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import wayline
from wayline.client import Wayline
from wayline.graph import END, START, StateGraph
from wayline.types import interrupt
from wayline.worker import Worker, WorkerConfig


class S(TypedDict):
    log: Annotated[list[Any], operator.add]


def ask(state: S) -> dict[str, Any]:
    return {"log": [f"child heard {interrupt('go on?')}"]}


def build(url: str) -> wayline.CompiledGraph:
    child = StateGraph(S, name="child")
    child.add_node("ask", ask)
    child.add_edge(START, "ask")
    parent = StateGraph(S, name="parent")
    parent.add_node("first", lambda s: {"log": ["first"]})
    parent.add_node("sub", child.compile())
    parent.add_edge(START, "first")
    parent.add_edge("first", "sub")
    parent.add_edge("sub", END)
    return parent.compile(url)


def wait_for(client: Wayline, run_id: str, status: str) -> Any:
    deadline = time.monotonic() + 30
    while (run := client.get(run_id)).status != status:
        assert time.monotonic() < deadline, f"run {run_id} is {run.status}, not {status}"
        time.sleep(0.02)
    return run


def test_a_worker_runs_a_subgraph_and_its_question_is_answered_from_the_parent(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    app = build(url)
    worker = Worker(url, app, WorkerConfig(poll_interval=0.02, lease_seconds=0.6))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        client = Wayline(url)
        client.start(app, {"log": []}, run_id="w1")
        wait_for(client, "w1", "interrupted")
        assert [
            i.value for i in app.get_state({"configurable": {"thread_id": "w1"}}).interrupts
        ] == ["go on?"]
        client.resume("w1", "yes")
        wait_for(client, "w1", "done")
        state = app.get_state({"configurable": {"thread_id": "w1"}}).values
        assert state == {"log": ["first", "first", "child heard yes"]}
        runs = {r.run_id: r.graph_name for r in client.store.list_runs("default")}
        assert runs["w1"] == "parent"
        assert [g for r, g in runs.items() if r.startswith("w1::")] == ["parent::child"]
    finally:
        worker.stop()
        thread.join(timeout=30)
