"""State schemas and the runtime as LangGraph's own tests use them (issue 25, state
helper): a callable object's annotated input schema, optional dataclass fields in the JSON
schema, a warning for a schema given as a value, and the runtime's execution info (thread,
namespace, first-attempt time) and server info, in a graph and in its subgraph."""

import dataclasses
import warnings

from langgraph.graph import START, StateGraph
from langgraph.graph.state import _get_node_name, _warn_invalid_state_schema
from langgraph.runtime import Runtime
from typing_extensions import TypedDict


class InputState(TypedDict):
    question: str


class FooState(InputState):
    foo: str


class OutputState(TypedDict):
    input_state: InputState


def pre_foo(_) -> FooState:
    return {"foo": "bar"}


class Foo:
    def __call__(self, state: FooState) -> OutputState:
        assert state.pop("foo") == "bar"
        return {"input_state": state}


def callable_object_schema(checkpointer):
    graph = StateGraph(InputState, output_schema=OutputState)
    graph.add_node(pre_foo).add_node(Foo()).add_edge(START, "pre_foo").add_edge("pre_foo", "Foo")
    return list(graph.compile().stream({"question": "hi"}, stream_mode="updates"))


@dataclasses.dataclass
class DataState:
    val1: str
    val2: int | None
    val3: str = "x"


def json_schema(checkpointer):
    graph = StateGraph(DataState).add_node("n", lambda x: x).add_edge(START, "n").compile()
    schema = graph.get_input_jsonschema()
    return [sorted(schema.get("required", [])), sorted(schema["properties"])]


def warns(checkpointer):
    out = []
    for schema in ({"foo": "bar"}, InputState):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _warn_invalid_state_schema(schema)
        out.append(len(caught))
    return [*out, _get_node_name(Foo()), _get_node_name(pre_foo)]


class Msg(TypedDict, total=False):
    message: str


def execution_info(checkpointer):
    seen = {}

    def sub_node(state: Msg, runtime: Runtime):
        seen["sub"] = runtime.execution_info
        return {"message": "sub"}

    def main_node(state: Msg, runtime: Runtime):
        seen["main"] = runtime.execution_info
        seen["server"] = runtime.server_info
        return {"message": "main"}

    sub = StateGraph(Msg).add_node("sub_node", sub_node).add_edge(START, "sub_node").compile()
    graph = (
        StateGraph(Msg)
        .add_node("main_node", main_node)
        .add_node("subgraph", sub)
        .add_edge(START, "main_node")
        .add_edge("main_node", "subgraph")
        .compile(checkpointer=checkpointer)
    )
    conf = {"thread_id": "t-1", "assistant_id": "asst", "graph_id": "g"}
    graph.invoke({"message": "hi"}, {"configurable": conf})
    main, sub_info, server = seen["main"], seen["sub"], seen["server"]
    return [
        main.thread_id,
        sub_info.thread_id,
        main.checkpoint_ns.startswith("main_node:") and "|" not in main.checkpoint_ns,
        sub_info.checkpoint_ns.startswith("subgraph:") and "|sub_node:" in sub_info.checkpoint_ns,
        main.task_id in main.checkpoint_ns,
        isinstance(main.node_first_attempt_time, float),
        main.node_attempt,
        (server.assistant_id, server.graph_id, server.user),
    ]


def main(checkpointer):
    out = []
    for part in (callable_object_schema, json_schema, warns, execution_info):
        out.append((part.__name__, part(checkpointer)))
    return out
