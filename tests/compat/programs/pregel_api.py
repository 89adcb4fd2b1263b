"""Graph-API behaviour LangGraph's own pregel tests use (issue 25, pregel helper):
``bulk_update_state`` spelling a run as ``__input__``/``__start__``/nodes (and a node's
``Command``), ``Overwrite``, ``push_message``, a single-value subgraph invoked in a node,
``str`` enum node names, ``update_state`` on an ``@entrypoint``, a single-value state's
interrupt, the error types of an ambiguous resume and an unknown edge, and an error
handler that crashed resumed without running its node again."""

import asyncio
import enum
import operator
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.errors import NodeError
from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages, push_message
from langgraph.types import Command, Overwrite, Send, StateUpdate, interrupt
from typing_extensions import TypedDict


class Foo(TypedDict):
    foo: str


class Log(TypedDict):
    messages: Annotated[list, operator.add]


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _history(graph, config):
    return [(s.values, s.next) for s in graph.get_state_history(config)]


def written_as_the_run(checkpointer):
    graph = (
        StateGraph(Foo)
        .add_node("agent", lambda s: {"foo": "agent"})
        .add_node("tool", lambda s: {"foo": "tool"})
        .add_edge(START, "agent")
        .add_edge("agent", "tool")
        .compile(checkpointer=checkpointer)
    )
    ran = {"configurable": {"thread_id": "ran"}}
    graph.invoke({"foo": "input"}, ran)
    written = {"configurable": {"thread_id": "written"}}
    graph.bulk_update_state(
        written,
        [
            [StateUpdate({"foo": "input"}, "__input__")],
            [StateUpdate({"foo": "input"}, "__start__")],
            [StateUpdate({"foo": "agent"}, "agent")],
            [StateUpdate({"foo": "tool"}, "tool")],
        ],
    )
    return [graph.get_state(written).values, _history(graph, written) == _history(graph, ran)]


def overwrites(checkpointer):
    graph = (
        StateGraph(Log)
        .add_node("a", lambda s: {"messages": ["a"]})
        .add_node("b", lambda s: {"messages": Overwrite(["b"])})
        .add_node("c", lambda s: {"messages": {"__overwrite__": ["c"]}})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "overwrite"}}
    return [graph.invoke({"messages": ["START"]}, config), graph.get_state(config).values]


def pushed(checkpointer):
    def chat(state: Chat):
        push_message(AIMessage(content="first", id="1"))
        push_message(AIMessage(content="second", id="2"))

    graph = StateGraph(Chat).add_node(chat).add_edge(START, "chat").compile()
    streamed, values = [], None
    for mode, chunk in graph.stream({"messages": []}, stream_mode=["messages", "values"]):
        if mode == "messages":
            streamed.append(chunk[0])
        else:
            values = chunk
    return [streamed, values]


def single_value_child(checkpointer):
    child = (
        StateGraph(list[str])
        .add_node("add_a", lambda v: [x + "a" for x in v])
        .add_edge(START, "add_a")
        .compile()
    )
    parent = (
        StateGraph(Foo)
        .add_node("call", lambda s: {"foo": "".join(child.invoke([s["foo"], "b"]))})
        .add_edge(START, "call")
        .compile()
    )
    return [child.invoke(["x"]), parent.invoke({"foo": "f"})]


class Name(str, enum.Enum):  # noqa: UP042 (as LangGraph users write it)
    FIRST = "first"
    SECOND = "second"


def enum_names(checkpointer):
    graph = StateGraph(Log)
    graph.add_node(Name.FIRST, lambda s: {"messages": ["first"]})
    graph.add_node(Name.SECOND, lambda s: {"messages": ["second"]})
    graph.add_edge(START, Name.FIRST)
    graph.add_conditional_edges(Name.FIRST, lambda s: Name.SECOND)
    graph.add_edge(Name.SECOND, END)
    return graph.compile().invoke({"messages": []})


def entrypoint_update(checkpointer):
    seen = []

    @entrypoint(checkpointer=checkpointer)
    def turn(inputs: Any, *, previous: Any) -> Any:
        seen.append(previous)
        return {"previous": previous, "current": inputs}

    config = {"configurable": {"thread_id": "entry"}}
    turn.update_state(config, {"a": "-1"})
    first = turn.invoke({"a": "1"}, config)
    turn.update_state(config, {"a": "3"})
    return [first, turn.invoke({"a": "2"}, config), seen]


def single_value_interrupt(checkpointer):
    def ask(value: list) -> list:
        return [interrupt("go on?")]

    def send_two(value: list):
        return [Send("echo", Command(goto="x")), Send("echo", 2)]

    graph = (
        StateGraph(Annotated[list, operator.add])
        .add_node("ask", ask)
        .add_node("echo", lambda arg: [repr(arg)])
        .add_edge(START, "ask")
        .add_conditional_edges("ask", send_two)
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "single"}}
    paused = graph.invoke(["start"], config)
    return [list(paused), graph.invoke(Command(resume="yes"), config)]


def errors(checkpointer):
    def ask(state: Foo, name: str):
        return {"foo": interrupt(name)}

    graph = (
        StateGraph(Foo)
        .add_node("a", lambda s: ask(s, "a"))
        .add_node("b", lambda s: ask(s, "b"))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "ambiguous"}}
    graph.invoke({"foo": ""}, config)
    found = []
    try:
        graph.invoke(Command(resume="which?"), config)
    except RuntimeError as exc:
        found.append("you must specify the interrupt id" in str(exc))
    bad = StateGraph(Foo).add_node("n", lambda s: s).add_edge(START, "n")
    bad.add_edge("unknown", "n")
    try:
        bad.compile()
    except ValueError as exc:
        found.append("Found edge starting at unknown node 'unknown'" in str(exc))
    return found


def handler_resumed(checkpointer):
    calls = {"node": 0, "handler": 0}
    seen = []
    crash = [True]

    def fail(state: Foo):
        calls["node"] += 1
        raise RuntimeError("boom")

    async def handler(state: Foo, error: NodeError):
        calls["handler"] += 1
        seen.append((error.node, "boom" in str(error.error)))
        if crash[0]:
            raise RuntimeError("handler crash")
        return {"foo": "recovered"}

    graph = (
        StateGraph(Foo)
        .add_node("fail", fail, error_handler=handler)
        .add_edge(START, "fail")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "handler"}}
    try:
        asyncio.run(graph.ainvoke({"foo": ""}, config))
    except RuntimeError as exc:
        seen.append(str(exc))
    crash[0] = False
    return [asyncio.run(graph.ainvoke(None, config)), calls, seen]


def main(checkpointer):
    parts = (written_as_the_run, overwrites, pushed, single_value_child, enum_names)
    parts += (entrypoint_update, single_value_interrupt, errors, handler_resumed)
    return [(part.__name__, part(checkpointer)) for part in parts]
