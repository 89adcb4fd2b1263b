"""LangGraph 1.2's ``DeltaChannel`` in a state schema: one ``reducer(value, writes)`` call a
step (two nodes writing in one step reach the reducer as one batch), an ``Overwrite``
replacing the value, ``_messages_delta_reducer`` merging messages by id and removing them,
and the value carried across turns of a thread with a checkpointer."""

import operator
from typing import Annotated

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from langgraph.types import Overwrite
from typing_extensions import TypedDict

BATCHES: list[int] = []


def counting_add(value, writes):
    BATCHES.append(len(writes))
    return value + [item for write in writes for item in write]


class Log(TypedDict):
    items: Annotated[list, DeltaChannel(counting_add)]
    turns: Annotated[int, operator.add]


def fan_out(checkpointer):
    graph = (
        StateGraph(Log)
        .add_node("a", lambda s: {"items": ["a"], "turns": 1})
        .add_node("b", lambda s: {"items": ["b1", "b2"]})
        .add_node("reset", lambda s: {"items": Overwrite(["fresh"])})
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", "reset")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "delta-1"}}
    BATCHES.clear()
    first = graph.invoke({"items": ["in"]}, config)
    second = graph.invoke({"items": ["again"]}, config)
    # how many calls differs (wayline folds the stored batches again to rebuild a state),
    # the batches do not: the input alone, then both nodes' writes of one step together
    return [sorted(first["items"]), second["items"], second["turns"], sorted(set(BATCHES))]


class Chat(TypedDict):
    messages: Annotated[list, DeltaChannel(_messages_delta_reducer)]


def chat(checkpointer):
    def respond(state):
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"reply-{n}", id=f"ai-{n}")]}

    def forget_first(state):
        return {"messages": [RemoveMessage(id=state["messages"][0].id)]}

    graph = (
        StateGraph(Chat)
        .add_node("respond", respond)
        .add_node("forget_first", forget_first)
        .add_edge(START, "respond")
        .add_edge("respond", "forget_first")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "delta-2"}}
    graph.invoke({"messages": [HumanMessage(content="hello", id="h1")]}, config)
    graph.invoke({"messages": [HumanMessage(content="edited", id="ai-1")]}, config)
    return [(m.id, m.content) for m in graph.get_state(config).values["messages"]]


def bad_frequency(checkpointer):
    try:
        DeltaChannel(counting_add, snapshot_frequency=0)
    except ValueError as exc:
        return type(exc).__name__
    return "accepted"


def main(checkpointer):
    return [(part.__name__, part(checkpointer)) for part in (fan_out, chat, bad_frequency)]
