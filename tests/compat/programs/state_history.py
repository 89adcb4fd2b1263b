"""State, history and persistence as LangGraph's own tests use them (issue 25, state
helper): a persistent subgraph (``checkpointer=True``) replayed from an earlier parent
checkpoint, the state of a subgraph invoked inside a node function in
``get_state(subgraphs=True)``, ``metadata["source"]`` of an update and a ``__copy__``, a
``__root__`` TypedDict, a reducer over ``Sequence``, input keys outside the input schema,
a nested pydantic model changed in place, and a pydantic model through ``@entrypoint``."""

import operator
from collections.abc import Sequence
from typing import Annotated

from langgraph.func import entrypoint, task
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict


class SubState(TypedDict):
    value: Annotated[list[str], operator.add]


class ParentState(TypedDict):
    results: Annotated[list[str], operator.add]


def persistent_replay(checkpointer):
    seen = []

    def sub_step(state: SubState):
        seen.append(list(state["value"]))
        return {"value": ["s"]}

    sub = StateGraph(SubState).add_node("sub_step", sub_step).add_edge(START, "sub_step")
    graph = (
        StateGraph(ParentState)
        .add_node("parent_node", lambda s: {"results": ["p"]})
        .add_node("sub_node", sub.compile(checkpointer=True))
        .add_edge(START, "parent_node")
        .add_edge("parent_node", "sub_node")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "replay"}}
    graph.invoke({"results": []}, config)
    graph.invoke({"results": []}, config)
    before = next(s for s in graph.get_state_history(config) if s.next == ("parent_node",))
    graph.invoke(None, before.config)
    graph.invoke({"results": []}, config)
    return seen


def child_in_function(checkpointer):
    def ask(state: SubState):
        return {"value": [interrupt("q")]}

    sub = (
        StateGraph(SubState)
        .add_node("a", lambda s: {"value": ["a"]})
        .add_node("ask", ask)
        .add_edge(START, "a")
        .add_edge("a", "ask")
        .compile()
    )
    graph = (
        StateGraph(SubState)
        .add_node("node", lambda s: sub.invoke(s))
        .add_edge(START, "node")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "fn"}}
    graph.invoke({"value": []}, config)
    child = graph.get_state(config, subgraphs=True).tasks[0].state
    return [child.values, child.next]


def sources(checkpointer):
    graph = (
        StateGraph(SubState)
        .add_node("a", lambda s: {"value": ["a"]})
        .add_node("b", lambda s: {"value": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=checkpointer)
    )
    config = {"configurable": {"thread_id": "src"}}
    graph.invoke({"value": []}, config)
    before_b = next(s for s in graph.get_state_history(config) if s.next == ("b",))
    copied = graph.get_state(graph.update_state(before_b.config, None, as_node="__copy__"))
    updated = graph.get_state(graph.update_state(before_b.config, {"value": ["x"]}))
    return [
        copied.metadata["source"],
        copied.next,
        updated.metadata["source"],
        updated.values,
    ]


class RootState(TypedDict):
    __root__: Annotated[list[str], operator.add]


class SeqState(TypedDict):
    hello: str
    messages: Annotated[Sequence[str], add_messages]


class Narrow(TypedDict):
    hello: str


class Wide(TypedDict):
    hello: str
    now: int


class Counted(TypedDict):
    value: Annotated[list[str], operator.add]
    counter: int


def parent_state_into_child(checkpointer):
    """A subgraph invoked inside a node with the parent's whole state reads its own keys."""
    sub = StateGraph(SubState).add_node("s", lambda s: {"value": ["s"]}).add_edge(START, "s")
    child = sub.compile()

    def call(state: Counted):
        return {"value": child.invoke(state)["value"]}

    graph = StateGraph(Counted).add_node("call", call).add_edge(START, "call")
    config = {"configurable": {"thread_id": "into"}}
    return graph.compile(checkpointer=checkpointer).invoke({"value": [], "counter": 1}, config)


class Jump(TypedDict):
    jump: bool


class Hops(TypedDict):
    hops: Annotated[list[str], operator.add]


def parent_command_through_function(checkpointer):
    """A child invoked inside a node (with the node's config) jumps its parent elsewhere."""
    from langgraph.types import Command

    def child_node(state: Jump):
        return Command(graph=Command.PARENT, goto="second") if state["jump"] else state

    child = StateGraph(Jump).add_node("node", child_node).add_edge(START, "node").compile()

    def first(state: Hops, config):
        child.invoke({"jump": True}, config)
        raise AssertionError("the child's Command leaves this function")

    graph = (
        StateGraph(Hops)
        .add_node("first", first)
        .add_node("second", lambda s: {"hops": ["second"]})
        .add_edge(START, "first")
        .compile(checkpointer=checkpointer)
    )
    return graph.invoke({"hops": []}, {"configurable": {"thread_id": "jump"}})


def schemas(checkpointer):
    root = StateGraph(RootState).add_node("n", lambda s: ["n"]).add_edge(START, "n").compile()
    seq = StateGraph(SeqState).add_node("n", lambda s: None).add_edge(START, "n").compile()
    seen = []

    def wide(state: Wide):
        seen.append(dict(state))
        return None

    narrow = StateGraph(Narrow).add_node("n", wide).add_edge(START, "n").compile()
    narrow.invoke({"hello": "there", "now": 3})
    messages = seq.invoke({"hello": "there", "messages": "hi"})["messages"]
    return [root.invoke(["in"]), [m.content for m in messages], seen]


class Inner(BaseModel):
    a: int = 0


class Outer(BaseModel):
    inner: Inner = Inner()
    outer: int = 0


class Item(BaseModel):
    a: str
    b: str = ""


def pydantic_states(checkpointer):
    def mutate(state: Outer) -> Outer:
        state.inner.a = 5
        state.outer = 10
        return state

    graph = StateGraph(Outer).add_node(mutate).add_edge(START, "mutate").compile()

    @task
    def foo(item: Item) -> Item:
        return Item(a=item.a + "foo")

    @entrypoint(checkpointer=checkpointer)
    def flow(item: Item) -> Item:
        return foo(item).result()

    out = flow.invoke(Item(a="x"), {"configurable": {"thread_id": "pyd"}})
    result = graph.invoke({"outer": 1})
    return [result["inner"].model_dump(), result["outer"], out.model_dump()]


def main(checkpointer):
    parts = (persistent_replay, child_in_function, sources, parent_state_into_child)
    parts += (parent_command_through_function, schemas, pydantic_states)
    return [(part.__name__, part(checkpointer)) for part in parts]
