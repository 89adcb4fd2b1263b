"""A task's path leaves wayline spelled as LangGraph's (``wayline.interop.lg_paths``), while
task ids, which derive from the inner spelling, stay as they were."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import wayline
from wayline import END, START, Send, StateGraph
from wayline.graph.lg_constants import PULL, PUSH
from wayline.ids import derive_id


class S(TypedDict):
    log: Annotated[list[str], operator.add]


def build() -> Any:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: [Send("b", s)])
    g.add_edge("b", END)
    return g.compile(wayline.connect("sqlite:///:memory:"), interrupt_before=["a", "b"])


def test_snapshot_task_paths_use_langgraphs_kinds_and_ids_keep_the_inner_spelling() -> None:
    app = build()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": []}, config)
    (task,) = app.get_state(config).tasks
    assert (PULL, PUSH) == ("__pregel_pull", "__pregel_push")
    assert task.path == (PULL, "a")
    assert task.id == derive_id("default", "t", 1, "pull", "a")  # as before the edge spelling
    app.invoke(None, config)
    (sent,) = app.get_state(config).tasks
    assert sent.name == "b" and sent.path == (PUSH, 0, False)  # LangGraph's mark: not a call
    history = list(app.get_state_history(config))
    assert history[-1].tasks[0].path == (PULL, START)  # the input checkpoint's __start__
