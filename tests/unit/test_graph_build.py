"""Building and compiling graphs: every definition error is typed and raised before a run."""

from __future__ import annotations

import dataclasses
import operator
import typing
from typing import Annotated, Any, Literal, TypedDict

import pytest

from wayline import END, START, Command, CompiledGraph, Send, StateGraph, interrupt
from wayline.errors import (
    DuplicateNodeError,
    EmptySequenceError,
    GraphError,
    GraphRecursionError,
    InvalidCheckpointerError,
    InvalidUpdateError,
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


def test_a_single_value_subgraph_invoked_in_a_node_returns_its_value() -> None:
    """As LangGraph: a ``StateGraph(list[str])`` invoked inside a parent's node (so run as
    the parent's child) returns its value, as when invoked alone."""
    child_g = StateGraph(list[str]).add_node("add_a", lambda v: [x + "a" for x in v])
    child_g.add_edge(START, "add_a")
    child = child_g.compile()

    class P(TypedDict):
        words: list[str]

    parent_g = StateGraph(P).add_node("call", lambda s: {"words": child.invoke(s["words"])})
    parent_g.add_edge(START, "call")
    alone: Any = child.invoke(["x"])
    assert alone == ["xa"]
    assert parent_g.compile().invoke({"words": ["b", "c"]}) == {"words": ["ba", "ca"]}


ADD_LIST: Any = Annotated[list, operator.add]


def test_a_single_value_node_may_return_a_command_whose_update_is_the_list() -> None:
    """As LangGraph: in ``StateGraph(Annotated[list, add])`` a node's
    ``Command(update=[...], goto=...)`` writes the list as one value (a list of Commands
    is several updates); a node's ``Command`` reads as LangGraph's, only its set fields."""

    def first(v: list[str]) -> Command[Any]:
        return Command(update=["one"], goto=Send("second", Command(goto="x")))

    def second(arg: Any) -> Any:
        return [Command(update=[f"two:{arg!r}"])]

    g = StateGraph(ADD_LIST).add_node("first", first)
    g.add_node("second", second)
    g.add_edge(START, "first")
    out: Any = g.compile().invoke(["zero"])
    assert out == ["zero", "one", "two:Command(goto='x')"]
    assert repr(Command(update={"a": 1}, goto="n")) == "Command(update={'a': 1}, goto='n')"


def test_an_interrupted_single_value_state_returns_the_questions() -> None:
    """As LangGraph: ``invoke`` of a single-value state that paused returns
    ``{"__interrupt__": [...]}`` (the value is not a dict to carry them)."""

    def ask(v: list[str]) -> list[str]:
        return [interrupt("go on?")]

    g = StateGraph(ADD_LIST).add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile()
    cfg = {"configurable": {"thread_id": "single"}}
    paused: Any = app.invoke(["start"], cfg)
    assert list(paused) == ["__interrupt__"] and paused["__interrupt__"][0].value == "go on?"
    done: Any = app.invoke(Command(resume="yes"), cfg)
    assert done == ["start", "yes"]


def test_a_function_node_shows_its_function_as_langgraph_runnable() -> None:
    def sync_node(s: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def async_node(s: dict[str, Any]) -> dict[str, Any]:
        return {}

    g = StateGraph(dict).add_node("s", sync_node).add_node("a", async_node)
    assert g.nodes["s"].runnable.func is sync_node and g.nodes["s"].runnable.afunc is None
    assert g.nodes["a"].runnable.afunc is async_node and g.nodes["a"].runnable.func is None


def test_dataclass_schema_channels_follow_its_fields() -> None:
    @dataclasses.dataclass
    class DC:
        items: Annotated[list[Any], operator.add]
        name: str = ""

    g = StateGraph(DC)
    assert set(g.schema.channels) == {"items", "name"}


def test_str_enum_members_name_nodes_as_their_values() -> None:
    """As LangGraph: ``class Name(str, Enum)`` members name nodes, edges and routes; they
    are stored as their text (the codec keeps no user types in routing)."""
    import enum

    class Name(str, enum.Enum):  # noqa: UP042 (str() is "Name.FIRST", as LangGraph users write it)
        FIRST = "first"
        SECOND = "second"

    class T(TypedDict):
        log: Annotated[list[str], operator.add]

    g = StateGraph(T)
    g.add_node(Name.FIRST, lambda s: {"log": ["first"]})
    g.add_node(Name.SECOND, lambda s: {"log": ["second"]})
    g.add_edge(START, Name.FIRST)
    g.add_conditional_edges(Name.FIRST, lambda s: Name.SECOND)
    g.add_edge(Name.SECOND, END)
    app = g.compile()
    assert sorted(app.nodes) == ["first", "second"]
    assert all(type(n) is str for n in app.nodes)
    assert app.invoke({"log": []}) == {"log": ["first", "second"]}


def one_arg(a: str) -> str:
    return a


class BadReducer(TypedDict):
    hello: Annotated[str, one_arg]


def test_graph_definition_errors_are_value_errors_saying_what_langgraph_says() -> None:
    """As LangGraph: an edge from an unknown node, a one-parameter reducer and two writes
    to a plain key in one step fail with LangGraph's words (and error types)."""
    g = StateGraph(dict).add_node("start", lambda s: s)
    g.add_edge(START, "start")
    g.add_edge("unknown", "start")
    with pytest.raises(ValueError, match="Found edge starting at unknown node 'unknown'"):
        g.compile()

    with pytest.raises(GraphError, match="Invalid reducer signature for state key 'hello'"):
        StateGraph(BadReducer)

    class T(TypedDict):
        hello: str

    fan = StateGraph(T).add_node("a", lambda s: {"hello": "a"})
    fan.add_node("b", lambda s: {"hello": "b"}).add_node("c", lambda s: {"hello": "c"})
    fan.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    with pytest.raises(InvalidUpdateError, match="At key 'hello'"):
        fan.compile().invoke({"hello": "there"})


def test_a_compiled_graph_and_its_nodes_copy_as_langgraph() -> None:
    """``graph.copy()`` and ``graph.nodes[name].copy({...})``, as LangGraph's ``Pregel`` and
    ``PregelNode``: shallow copies with the given attributes replaced."""

    class T(TypedDict):
        foo: str

    g = StateGraph(T).add_node("agent", lambda s: {"foo": "agent"})
    app = g.add_edge(START, "agent").compile()
    copied = app.copy({"config": {"recursion_limit": 5}})
    assert copied is not app and copied.config == {"recursion_limit": 5} and app.config == {}
    assert copied.invoke({"foo": "in"}) == {"foo": "agent"}
    with pytest.raises(TypeError, match="no attribute 'nope'"):
        app.copy({"nope": 1})
    node = app.nodes["agent"].copy({"defer": True})
    assert node.defer and not app.nodes["agent"].defer and node.fn is app.nodes["agent"].fn


def test_a_waiting_edge_into_end_ends_after_its_nodes() -> None:
    """As LangGraph: ``add_edge(["a", "b"], END)`` compiles; nothing runs after either."""

    class T(TypedDict):
        foo: Annotated[list[str], operator.add]

    g = (
        StateGraph(T)
        .add_node("a", lambda s: {"foo": ["a"]})
        .add_node("b", lambda s: {"foo": ["b"]})
    )
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], END)
    assert g.compile().invoke({"foo": []}) == {"foo": ["a", "b"]}
    with pytest.raises(GraphError, match="START and END cannot take part"):
        StateGraph(T).add_node("a", lambda s: {}).add_edge([START, "a"], END)


def test_a_builder_shows_its_channels_by_key_as_langgraph() -> None:
    """``StateGraph.channels``: every key of the state (and of an input or output schema)."""

    class Base(TypedDict):
        input: str

    class Full(Base, total=False):
        steps: Annotated[list[str], operator.add]

    g = StateGraph(Full)
    assert g.channels.keys() == {"input", "steps"}
    assert g.channels is g.schema.channels


def test_a_command_update_may_be_pairs_writing_a_key_twice() -> None:
    """As LangGraph: ``Command(update=[("foo", a), ("foo", b)])`` writes each pair, in
    order, through the reducer; the ``updates`` chunk shows a dict per write."""

    class T(TypedDict):
        foo: Annotated[str, lambda a, b: ", ".join(x for x in (a, b) if x)]

    g = StateGraph(T).add_node("one", lambda s: Command(update=[("foo", "a"), ("foo", "b")]))
    app = g.add_edge(START, "one").compile()
    assert list(app.stream({"foo": "in"})) == [{"one": [{"foo": "a"}, {"foo": "b"}]}]
    assert app.invoke({"foo": "in"}) == {"foo": "in, a, b"}
    plain = StateGraph(T).add_node("one", lambda s: [("foo", "a")]).add_edge(START, "one")
    with pytest.raises(InvalidUpdateError):  # not a Command's: refused, as by LangGraph
        plain.compile().invoke({"foo": "in"})


def test_a_command_shows_only_the_fields_it_sets_as_langgraphs_does() -> None:
    from wayline import Send

    assert repr(Command(goto=Send("b", 3))) == "Command(goto=Send(node='b', arg=3))"
    assert repr(Command(update={"x": 1}, resume="yes")) == "Command(update={'x': 1}, resume='yes')"
    assert repr(Command()) == "Command()"
