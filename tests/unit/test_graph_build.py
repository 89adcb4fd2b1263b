"""Building and compiling graphs: every definition error is typed and raised before a run."""

from __future__ import annotations

import dataclasses
import operator
import typing
from typing import Annotated, Any, Literal, TypedDict

import pytest

from wayline import END, START, Command, CompiledGraph, StateGraph
from wayline.errors import (
    DuplicateNodeError,
    EmptySequenceError,
    GraphError,
    GraphRecursionError,
    InvalidCheckpointerError,
    StoreURLError,
    UnknownNodeError,
    WaylineError,
)


class State(TypedDict):
    log: Annotated[list[Any], operator.add]
    value: int


def noop(state: State) -> dict[str, Any]:
    return {}


def step_a(state: State) -> dict[str, Any]:
    return {"log": ["a"]}


def step_b(state: State) -> dict[str, Any]:
    return {"log": ["b"]}


def go_nowhere(state: State) -> Command[Literal["missing"]]:
    return Command(goto="missing")


def go_b_or_end(state: State) -> Command[Literal["b", END]]:  # type: ignore[valid-type]  # LangGraph's idiom; mypy takes no names in Literal
    return Command(goto="b")


def go_back_to_a(state: State) -> Command[Literal["a"]]:
    return Command(goto="a")


def choose_literal(state: State) -> Literal["b", "ghost"]:
    return "b"


def graph_with(*names: str) -> StateGraph:
    g = StateGraph(State)
    for name in names:
        g.add_node(name, noop)
    return g


# -- add_node ------------------------------------------------------------------------


def test_duplicate_node_name_is_refused() -> None:
    g = graph_with("a")
    with pytest.raises(DuplicateNodeError, match="'a'"):
        g.add_node("a", noop)
    assert issubclass(DuplicateNodeError, GraphError)


@pytest.mark.parametrize("name", [START, END])
def test_start_and_end_are_reserved_node_names(name: str) -> None:
    with pytest.raises(GraphError, match="reserved"):
        StateGraph(State).add_node(name, noop)


@pytest.mark.parametrize("name", ["a:b", "a|b"])
def test_node_names_may_not_contain_separators(name: str) -> None:
    with pytest.raises(GraphError, match="may not contain"):
        StateGraph(State).add_node(name, noop)


def test_node_may_share_a_state_key_name_as_in_langgraph() -> None:
    g = StateGraph(State)
    g.add_node("value", lambda s: {"value": 7})
    g.add_edge(START, "value")
    assert g.compile().invoke({"log": []})["value"] == 7


def test_add_node_needs_a_function() -> None:
    with pytest.raises(GraphError, match="needs a function"):
        StateGraph(State).add_node("a")


def test_add_node_with_only_a_function_uses_its_name() -> None:
    g = StateGraph(State)
    g.add_node(step_a)
    assert list(g.nodes) == ["step_a"]


def test_add_node_with_a_callable_object_uses_its_class_name() -> None:
    class Worker:
        def __call__(self, state: State) -> dict[str, Any]:
            return {"log": ["worker"]}

    g = StateGraph(State)
    g.add_node(Worker())
    g.add_edge(START, "Worker")
    assert g.compile().invoke({"log": []}) == {"log": ["worker"]}


def test_add_sequence_chains_nodes_in_order() -> None:
    g = StateGraph(State)
    g.add_sequence([step_b, ("named", step_a), step_a])
    g.add_edge(START, "step_b")
    out = g.compile().invoke({"log": []})
    assert out["log"] == ["b", "a", "a"]


def test_add_sequence_needs_a_node_and_distinct_names_as_in_langgraph() -> None:
    with pytest.raises(EmptySequenceError) as empty:
        StateGraph(State).add_sequence([])
    assert isinstance(empty.value, ValueError)
    with pytest.raises(ValueError):
        StateGraph(State).add_sequence([step_a, step_a])


def test_compile_refuses_a_checkpointer_that_is_not_a_store() -> None:
    class NotAStore:
        pass

    g = StateGraph(State)
    g.add_node("a", noop)
    g.add_edge(START, "a")
    with pytest.raises(InvalidCheckpointerError, match="Invalid checkpointer provided") as bad:
        g.compile(checkpointer=NotAStore())  # type: ignore[arg-type]
    assert isinstance(bad.value, TypeError)


# -- edges ---------------------------------------------------------------------------


def test_end_cannot_start_an_edge() -> None:
    with pytest.raises(GraphError, match="END"):
        graph_with("a").add_edge(END, "a")


def test_start_cannot_end_an_edge() -> None:
    with pytest.raises(GraphError, match="START"):
        graph_with("a").add_edge("a", START)


@pytest.mark.parametrize("starts", [[START, "a"], ["a", END]])
def test_join_edges_cannot_involve_start_or_end(starts: list[str]) -> None:
    with pytest.raises(GraphError):
        graph_with("a", "b").add_edge(starts, "b")


def test_join_edge_needs_a_start() -> None:
    with pytest.raises(GraphError, match="at least one"):
        graph_with("a").add_edge([], "a")


# -- compile-time validation ---------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda g: g.add_edge(START, "ghost"), id="edge-to-unknown"),
        pytest.param(
            lambda g: (g.add_edge(START, "a"), g.add_edge("ghost", "a")), id="edge-from-unknown"
        ),
        pytest.param(
            lambda g: (g.add_edge(START, "a"), g.add_edge(["a", "ghost"], "b")),
            id="join-from-unknown",
        ),
        pytest.param(
            lambda g: (g.add_edge(START, "a"), g.add_edge(["a", "b"], "ghost")),
            id="join-to-unknown",
        ),
        pytest.param(
            lambda g: (g.add_edge(START, "a"), g.add_conditional_edges("ghost", lambda s: END)),
            id="branch-from-unknown",
        ),
        pytest.param(
            lambda g: (
                g.add_edge(START, "a"),
                g.add_conditional_edges("a", lambda s: "x", {"x": "ghost", "y": END}),
            ),
            id="path-map-to-unknown",
        ),
        pytest.param(
            lambda g: (
                g.add_edge(START, "a"),
                g.add_conditional_edges("a", lambda s: "x", ["ghost"]),
            ),
            id="path-map-list-with-unknown",
        ),
        pytest.param(
            lambda g: (g.add_edge(START, "a"), g.add_conditional_edges("a", choose_literal)),
            id="literal-annotation-with-unknown",
        ),
        pytest.param(lambda g: g.set_entry_point("ghost"), id="entry-point-unknown"),
    ],
)
def test_unknown_node_in_an_edge_fails_compile(build) -> None:  # type: ignore[no-untyped-def]
    g = graph_with("a", "b")
    build(g)
    with pytest.raises(UnknownNodeError, match="'ghost'"):
        g.compile()


def test_unknown_node_error_lists_the_known_nodes() -> None:
    g = graph_with("alpha", "beta")
    g.add_edge(START, "gamma")
    with pytest.raises(UnknownNodeError) as info:
        g.compile()
    assert "['alpha', 'beta']" in str(info.value)


def test_command_goto_annotation_naming_an_unknown_node_fails_compile() -> None:
    g = StateGraph(State)
    g.add_node("a", go_nowhere)
    g.add_edge(START, "a")
    with pytest.raises(UnknownNodeError, match="'missing'"):
        g.compile()


def test_command_goto_annotation_counts_as_a_path_to_end() -> None:
    g = StateGraph(State)
    g.add_node("a", go_b_or_end)
    g.add_node("b", step_b)
    g.add_edge(START, "a")
    g.add_edge("b", END)
    assert isinstance(g.compile(), CompiledGraph)


def test_a_loop_without_end_compiles_and_stops_at_the_recursion_limit() -> None:
    """As in LangGraph: a graph whose only exit is the recursion limit is valid, and the
    limit raises GraphRecursionError at run time (it was NoPathToEndError at compile)."""
    g = graph_with("a", "b")
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "a")
    app = g.compile()
    cfg = {"configurable": {"thread_id": "loop"}, "recursion_limit": 5}
    with pytest.raises(GraphRecursionError, match="recursion_limit"):
        app.invoke({"log": []}, cfg)
    snapshot = app.get_state(cfg)
    assert snapshot.metadata["step"] == 5 and snapshot.next == ("b",)


def test_command_goto_that_only_loops_stops_at_the_recursion_limit() -> None:
    g = StateGraph(State)
    g.add_node("a", go_back_to_a)
    g.add_edge(START, "a")
    with pytest.raises(GraphRecursionError):
        g.compile().invoke({"log": []}, {"recursion_limit": 3})


def test_graph_without_entry_point_fails_compile() -> None:
    g = graph_with("a")
    g.add_edge("a", END)
    with pytest.raises(GraphError, match="entry point"):
        g.compile()


def test_conditional_entry_point_counts_as_entry() -> None:
    g = graph_with("a")
    g.set_conditional_entry_point(lambda s: "a", ["a"])
    g.set_finish_point("a")
    assert g.compile().invoke({"log": []}) == {"log": []}


def test_loop_with_conditional_exit_compiles() -> None:
    g = graph_with("a", "b")
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_conditional_edges("b", lambda s: "a" if s["value"] < 3 else END, ["a", END])
    assert isinstance(g.compile(), CompiledGraph)


def test_node_without_outgoing_edges_ends_the_run() -> None:
    g = StateGraph(State)
    g.add_node("a", step_a)
    g.add_edge(START, "a")
    out = g.compile().invoke({"log": []})
    assert out == {"log": ["a"]}


@pytest.mark.parametrize("every", [0, "10", 2.5, True])
def test_snapshot_every_must_be_a_positive_whole_number(every: Any) -> None:
    g = graph_with("a")
    g.set_entry_point("a")
    with pytest.raises(GraphError, match="snapshot_every"):
        g.compile(snapshot_every=every)


def test_compile_with_bad_store_url_fails() -> None:
    g = graph_with("a")
    g.set_entry_point("a")
    with pytest.raises(StoreURLError):
        g.compile("nope")


def test_graph_errors_share_a_root() -> None:
    for cls in (DuplicateNodeError, UnknownNodeError):
        assert issubclass(cls, GraphError)
    assert issubclass(GraphError, WaylineError)


# -- state schemas -------------------------------------------------------------------


class NotASchema:
    a: int


def test_a_class_with_annotations_must_be_typeddict_dataclass_or_pydantic() -> None:
    with pytest.raises(GraphError, match="state schema"):
        StateGraph(NotASchema)


@pytest.mark.parametrize("schema", [int, list, list[str], Annotated[list[str], operator.add]])
def test_any_other_type_is_a_single_value_state(schema: Any) -> None:
    """As LangGraph: ``StateGraph(list[str])`` holds one value; nodes get it and return
    the next (folded through the reducer of ``Annotated[list, add]``)."""
    g = StateGraph(schema).add_node("n", lambda v: [3] if v in ([], None) else v)
    g.add_edge(START, "n")
    app = g.compile()
    start = [1, 2] if schema is not int else 7
    out: Any = app.invoke(start)
    assert out == ([1, 2, 1, 2] if typing.get_origin(schema) is Annotated else start)


def test_dataclass_schema_channels_follow_its_fields() -> None:
    @dataclasses.dataclass
    class DC:
        items: Annotated[list[Any], operator.add]
        name: str = ""

    g = StateGraph(DC)
    assert set(g.schema.channels) == {"items", "name"}


def test_a_command_shows_only_the_fields_it_sets_as_langgraphs_does() -> None:
    from wayline import Send

    assert repr(Command(goto=Send("b", 3))) == "Command(goto=Send(node='b', arg=3))"
    assert repr(Command(update={"x": 1}, resume="yes")) == "Command(update={'x': 1}, resume='yes')"
    assert repr(Command()) == "Command()"
