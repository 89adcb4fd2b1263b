"""Running graphs: ordering, routing, Send, Command, context, state inspection, tenants."""

from __future__ import annotations

import operator
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, Command, NodeContext, Send, StateGraph
from wayline.errors import ResumeError, UnknownNodeError, WaylineError
from wayline.graph.travel import checkpoint_id


class State(TypedDict):
    log: Annotated[list[Any], operator.add]
    last: str
    count: int


def cfg(thread: str = "t", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **configurable}}


def writer(name: str):  # type: ignore[no-untyped-def]
    def node(state: State) -> dict[str, Any]:
        return {"log": [name], "last": name} if name != "skip" else {}

    node.__name__ = name
    return node


def appender(name: str):  # type: ignore[no-untyped-def]
    def node(state: State) -> dict[str, Any]:
        return {"log": [name]}

    node.__name__ = name
    return node


# -- sequencing and folding ----------------------------------------------------------


def test_linear_graph_runs_in_order_and_keeps_last_values() -> None:
    g = StateGraph(State)
    g.add_sequence([writer("one"), writer("two"), writer("three")])
    g.add_edge(START, "one")
    g.add_edge("three", END)
    app = g.compile()
    out = app.invoke({"log": ["input"], "count": 7}, cfg())
    assert out == {"log": ["input", "one", "two", "three"], "last": "three", "count": 7}
    run = app.store.get_run("default", "t")
    assert run is not None
    assert run.status == "done"
    assert run.step == 3  # the input step plus three node steps


def test_parallel_writes_fold_by_node_name_then_sends_in_order() -> None:
    g = StateGraph(State)
    g.add_node("fan", appender("fan"))
    for name in ("zeta", "alpha", "mid"):
        g.add_node(name, appender(name))
        g.add_edge(name, END)

    def worker(arg: int) -> dict[str, Any]:
        return {"log": [f"w{arg}"]}

    g.add_node("worker", worker)
    g.add_edge("worker", END)
    g.add_edge(START, "fan")
    # twelve Sends so that index 10 and 11 must sort after 9 (numeric, not textual)
    g.add_conditional_edges(
        "fan", lambda s: ["zeta", "alpha", "mid", *[Send("worker", i) for i in range(12)]]
    )
    out = g.compile().invoke({"log": []})
    assert out["log"] == ["fan", "alpha", "mid", "zeta", *[f"w{i}" for i in range(12)]]


def test_two_writes_to_a_key_without_reducer_in_one_step_are_rejected() -> None:
    g = StateGraph(State)
    g.add_node("a", writer("a"))
    g.add_node("b", writer("b"))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(wayline.errors.InvalidUpdateError, match="'last'"):
        g.compile().invoke({"log": []})


def test_join_waits_for_all_sources_across_steps() -> None:
    g = StateGraph(State)
    for name in ("a", "a2", "b", "join"):
        g.add_node(name, appender(name))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge("a", "a2")
    g.add_edge(["a2", "b"], "join")
    g.add_edge("join", END)
    app = g.compile()
    updates = list(app.stream({"log": []}, cfg(), stream_mode="updates"))
    assert updates == [
        {"a": {"log": ["a"]}},
        {"b": {"log": ["b"]}},
        {"a2": {"log": ["a2"]}},
        {"join": {"log": ["join"]}},
    ]
    assert app.get_state(cfg()).values["log"] == ["a", "b", "a2", "join"]


def test_join_fires_again_each_time_all_sources_ran() -> None:
    class Loop(TypedDict):
        log: Annotated[list[Any], operator.add]
        count: int

    def a(state: Loop) -> dict[str, Any]:
        return {"log": ["a"], "count": state["count"] + 1}

    g = StateGraph(Loop)
    g.add_node("a", a)
    g.add_node("b", appender("b"))
    g.add_node("join", appender("join"))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "join")
    g.add_conditional_edges("join", lambda s: ["a", "b"] if s["count"] < 2 else END)
    out = g.compile().invoke({"log": [], "count": 0})
    assert out["log"] == ["a", "b", "join", "a", "b", "join"]


# -- conditional edges ----------------------------------------------------------------


def test_conditional_edge_without_path_map_routes_by_name() -> None:
    g = StateGraph(State)
    for name in ("router", "left", "right"):
        g.add_node(name, appender(name))
    g.add_edge(START, "router")
    g.add_conditional_edges("router", lambda s: "right" if s["count"] > 0 else "left")
    app = g.compile()
    assert app.invoke({"log": [], "count": 1})["log"] == ["router", "right"]
    assert app.invoke({"log": [], "count": 0})["log"] == ["router", "left"]


def test_conditional_edge_with_mapping_path_map() -> None:
    g = StateGraph(State)
    for name in ("router", "left", "right"):
        g.add_node(name, appender(name))
    g.add_edge(START, "router")
    g.add_conditional_edges("router", lambda s: s["count"] > 0, {True: "right", False: END})
    app = g.compile()
    assert app.invoke({"log": [], "count": 5})["log"] == ["router", "right"]
    assert app.invoke({"log": [], "count": 0})["log"] == ["router"]


def test_conditional_edge_may_return_a_list_of_targets() -> None:
    g = StateGraph(State)
    for name in ("router", "x", "y", "z"):
        g.add_node(name, appender(name))
    g.add_edge(START, "router")
    g.add_conditional_edges("router", lambda s: ["z", "x"], ["x", "y", "z"])
    assert g.compile().invoke({"log": []})["log"] == ["router", "x", "z"]


def test_conditional_edge_value_missing_from_path_map_fails_the_run() -> None:
    g = StateGraph(State)
    g.add_node("router", appender("router"))
    g.add_node("x", appender("x"))
    g.add_edge(START, "router")
    g.add_conditional_edges("router", lambda s: "nope", {"yes": "x"})
    app = g.compile()
    with pytest.raises(UnknownNodeError, match="'nope'"):
        app.invoke({"log": []}, cfg())
    run = app.store.get_run("default", "t")
    assert run is not None and run.status == "failed"


def test_conditional_edge_to_unknown_node_fails_the_run() -> None:
    g = StateGraph(State)
    g.add_node("router", appender("router"))
    g.add_edge(START, "router")
    g.add_conditional_edges("router", lambda s: "ghost")
    with pytest.raises(UnknownNodeError, match="'ghost'"):
        g.compile().invoke({"log": []})


def test_conditional_edge_sees_pre_step_state_plus_only_its_own_writes() -> None:
    seen: dict[str, Any] = {}

    def route_a(state: State) -> str:
        seen["a"] = list(state["log"])
        return END

    def route_b(state: State) -> str:
        seen["b"] = list(state["log"])
        return END

    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.add_node("b", appender("b"))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_conditional_edges("a", route_a)
    g.add_conditional_edges("b", route_b)
    out = g.compile().invoke({"log": ["in"]})
    assert out["log"] == ["in", "a", "b"]
    assert seen == {"a": ["in", "a"], "b": ["in", "b"]}


def test_conditional_entry_point_sees_the_input() -> None:
    g = StateGraph(State)
    g.add_node("small", appender("small"))
    g.add_node("big", appender("big"))
    g.set_conditional_entry_point(lambda s: "big" if s["count"] > 10 else "small")
    assert g.compile().invoke({"log": [], "count": 11})["log"] == ["big"]


# -- Send ----------------------------------------------------------------------------


def test_send_map_reduce() -> None:
    class MapState(TypedDict):
        subjects: list[str]
        jokes: Annotated[list[Any], operator.add]
        best: str

    received: list[Any] = []

    def make_joke(arg: dict[str, Any]) -> dict[str, Any]:
        received.append(arg)
        return {"jokes": [f"joke about {arg['subject']}"]}

    def pick(state: MapState) -> dict[str, Any]:
        return {"best": max(state["jokes"], key=len)}

    g = StateGraph(MapState)
    g.add_node("make_joke", make_joke)
    g.add_node("pick", pick)
    g.add_conditional_edges(
        START, lambda s: [Send("make_joke", {"subject": x}) for x in s["subjects"]]
    )
    g.add_edge("make_joke", "pick")
    g.add_edge("pick", END)
    app = g.compile()
    out = app.invoke({"subjects": ["cats", "elephants", "ox"]}, cfg())
    assert out["jokes"] == ["joke about cats", "joke about elephants", "joke about ox"]
    assert out["best"] == "joke about elephants"
    # each worker got its own argument, not the state
    assert sorted(r["subject"] for r in received) == ["cats", "elephants", "ox"]
    # Send arguments are stored: the state reconstructs from the store
    assert app.get_state(cfg()).values == out


def test_send_to_unknown_node_fails_the_run() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: [Send("ghost", 1)])
    with pytest.raises(UnknownNodeError, match="'ghost'"):
        g.compile().invoke({"log": []})


# -- Command ---------------------------------------------------------------------------


def test_node_command_updates_and_goes_to_nodes_and_sends() -> None:
    def a(state: State) -> Command[Any]:
        return Command(update={"log": ["a"], "last": "a"}, goto=["c", "b"])

    def c(state: State) -> Command[Any]:
        return Command(update={"log": ["c"]}, goto=Send("w", {"x": 1}))

    def w(arg: dict[str, Any]) -> dict[str, Any]:
        return {"log": [f"w{arg['x']}"]}

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_node("b", appender("b"))
    g.add_node("c", c)
    g.add_node("w", w)
    g.add_edge(START, "a")
    app = g.compile()
    updates = list(app.stream({"log": []}, cfg(), stream_mode="updates"))
    assert updates == [
        {"a": {"log": ["a"], "last": "a"}},
        {"b": {"log": ["b"]}},
        {"c": {"log": ["c"]}},
        {"w": {"log": ["w1"]}},
    ]
    assert app.get_state(cfg()).values == {"log": ["a", "b", "c", "w1"], "last": "a"}


def test_command_goto_loops_until_it_goes_to_end() -> None:
    calls: list[str] = []

    def a(state: State) -> Command[Any]:
        calls.append("a")
        return Command(
            update={"count": state["count"] + 1}, goto="a" if state["count"] < 2 else END
        )

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_edge(START, "a")
    out = g.compile().invoke({"count": 0})
    assert out == {"log": [], "count": 3}  # a list reducer starts from list(), as LangGraph
    assert calls == ["a", "a", "a"]


def test_command_goto_unknown_node_fails() -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: Command(goto="ghost"))
    g.add_edge(START, "a")
    with pytest.raises(UnknownNodeError, match="'ghost'"):
        g.compile().invoke({"log": []})


def test_command_as_input_updates_and_routes() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.add_node("b", appender("b"))
    g.add_edge(START, "a")
    out = g.compile().invoke(Command(update={"log": ["in"]}, goto="b"))
    assert out["log"] == ["in", "a", "b"]


def test_list_of_commands_from_a_node() -> None:
    def a(state: State) -> list[Command[Any]]:
        return [Command(update={"log": ["x"]}, goto="b"), Command(update={"count": 1})]

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_node("b", appender("b"))
    g.add_edge(START, "a")
    assert g.compile().invoke({"log": []}) == {"log": ["x", "b"], "count": 1}


# -- the node context --------------------------------------------------------------


def test_node_context_describes_where_the_node_runs() -> None:
    contexts: list[NodeContext] = []

    def a(state: State, ctx: NodeContext) -> dict[str, Any]:
        contexts.append(ctx)
        return {"log": ["a"]}

    def b(state: State, ctx: NodeContext) -> dict[str, Any]:
        contexts.append(ctx)
        return {"log": ["b"]}

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.compile().invoke({"log": []}, cfg("thread-1", tenant="acme"))
    first, second = contexts
    assert (first.run_id, first.tenant, first.node) == ("thread-1", "acme", "a")
    assert (second.node, second.step) == ("b", first.step + 1)
    assert first.task_id != second.task_id
    assert first.config["configurable"]["thread_id"] == "thread-1"


def test_node_context_reads_like_the_langgraph_config() -> None:
    seen: list[Any] = []

    def node(state: State, config: Any) -> dict[str, Any]:
        seen.append(
            (
                config["configurable"]["thread_id"],
                config["recursion_limit"],
                "configurable" in config,
            )
        )
        return {}

    g = StateGraph(State)
    g.add_node("node", node)
    g.set_entry_point("node")
    g.compile().invoke({"log": []}, {"configurable": {"thread_id": "abc"}, "recursion_limit": 9})
    assert seen == [("abc", 9, True)]


def test_task_ids_are_deterministic_per_run_and_step() -> None:
    ids: list[str] = []

    def node(state: State, ctx: NodeContext) -> dict[str, Any]:
        ids.append(ctx.task_id)
        return {}

    def build() -> Any:
        g = StateGraph(State)
        g.add_node("node", node)
        g.set_entry_point("node")
        return g.compile()

    build().invoke({"log": []}, cfg("same"))
    build().invoke({"log": []}, cfg("same"))
    build().invoke({"log": []}, cfg("other"))
    assert ids[0] == ids[1]
    assert ids[0] != ids[2]


# -- threads, inspection -------------------------------------------------------------


def test_a_second_input_on_a_thread_continues_its_state() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.set_entry_point("a")
    app = g.compile()
    app.invoke({"log": ["first"]}, cfg())
    out = app.invoke({"log": ["second"]}, cfg())
    assert out["log"] == ["first", "a", "second", "a"]


def test_invoke_none_on_a_new_run_is_a_resume_error() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.set_entry_point("a")
    with pytest.raises(ResumeError, match="start it with an input"):
        g.compile().invoke(None, cfg())


def test_invoke_none_on_a_finished_run_returns_its_state() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.set_entry_point("a")
    app = g.compile()
    app.invoke({"log": []}, cfg())
    assert app.invoke(None, cfg()) == {"log": ["a"]}


def test_invoke_without_thread_id_creates_a_fresh_run_each_time() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.set_entry_point("a")
    app = g.compile()
    assert app.invoke({"log": []}) == {"log": ["a"]}
    assert app.invoke({"log": []}) == {"log": ["a"]}
    assert len(app.store.list_runs("default")) == 2


def test_unknown_durability_is_refused() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.set_entry_point("a")
    with pytest.raises(WaylineError, match="durability"):
        g.compile().invoke({"log": []}, cfg(), durability="never")


def build_chain() -> StateGraph:
    g = StateGraph(State)
    g.add_sequence([writer("one"), writer("two")])
    g.add_edge(START, "one")
    g.add_edge("two", END)
    return g


def test_get_state_of_a_finished_run() -> None:
    app = build_chain().compile()
    app.invoke({"log": []}, cfg())
    snap = app.get_state(cfg())
    assert snap.values == {"log": ["one", "two"], "last": "two"}
    assert snap.next == ()
    assert snap.metadata["step"] == 2
    assert snap.read_info is not None and snap.read_info.status == "done"
    assert snap.config["configurable"]["thread_id"] == "t"
    parent = {"thread_id": "t", "checkpoint_ns": ""}  # as LangGraph's: no step, no tenant
    parent["checkpoint_id"] = checkpoint_id("default", "t", 1)  # the id encodes the step
    assert snap.parent_config == {"configurable": parent}
    assert snap.metadata == {"source": "loop", "step": 2, "parents": {}}
    assert snap.created_at is not None
    assert snap.interrupts == ()


def test_get_state_history_walks_back_from_the_newest_step() -> None:
    app = build_chain().compile()
    app.invoke({"log": ["in"]}, cfg())
    history = list(app.get_state_history(cfg()))
    assert [s.values["log"] for s in history] == [
        ["in", "one", "two"],
        ["in", "one"],
        ["in"],
        [],  # as LangGraph's: the input checkpoint, the state before the input
    ]
    assert [s.next for s in history] == [(), ("two",), ("one",), ("__start__",)]
    assert [s.metadata["step"] for s in history] == [2, 1, 0, -1]
    assert [s.metadata["source"] for s in history] == ["loop", "loop", "loop", "input"]
    assert [t.result for t in history[-1].tasks] == [{"log": ["in"]}]
    assert history[-1].parent_config is None
    assert history[-2].parent_config == history[-1].config
    assert len(list(app.get_state_history(cfg(), limit=2))) == 2


def test_get_state_at_a_given_step() -> None:
    app = build_chain().compile()
    app.invoke({"log": []}, cfg())
    snap = app.get_state(cfg(step=1))
    assert snap.values == {"log": ["one"], "last": "one"}
    assert snap.next == ("two",)


def test_get_state_of_an_unknown_run_is_empty() -> None:
    app = build_chain().compile()
    snap = app.get_state(cfg("never-ran"))
    assert (snap.values, snap.next) == ({}, ())
    assert list(app.get_state_history(cfg("never-ran"))) == []


def test_get_state_needs_a_thread_id() -> None:
    with pytest.raises(WaylineError, match="thread_id"):
        build_chain().compile().get_state({})


def test_a_new_process_reads_the_state_from_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    out = build_chain().compile(url).invoke({"log": ["in"]}, cfg())
    fresh = build_chain().compile(url)
    assert fresh.get_state(cfg()).values == out
    assert fresh.state_digest(cfg()) == fresh.store.get_run("default", "t").state_digest  # type: ignore[union-attr]


def test_reconstruction_replays_at_most_snapshot_every_deltas() -> None:
    class Counter(TypedDict):
        log: Annotated[list[Any], operator.add]
        count: int

    def tick(state: Counter) -> dict[str, Any]:
        return {"log": [state["count"]], "count": state["count"] + 1}

    g = StateGraph(Counter)
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["count"] < 12 else END)
    app = g.compile(snapshot_every=5)
    out = app.invoke({"log": [], "count": 0}, cfg())
    for snap in app.get_state_history(cfg()):
        assert snap.read_info is not None and snap.read_info.replayed_steps <= 5
        step = snap.metadata["step"]
        assert snap.values["log"] == list(range(step))
    assert app.get_state(cfg()).values == out


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_durability_modes_reach_the_same_state(durability: str) -> None:
    g = StateGraph(State)
    for name in ("a", "b", "c"):
        g.add_node(name, appender(name))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "c")
    app = g.compile()
    out = app.invoke({"log": []}, cfg(), durability=durability)
    assert out == {"log": ["a", "b", "c"]}
    assert app.get_state(cfg()).values == out
    run = app.store.get_run("default", "t")
    assert run is not None and (run.status, run.durability) == ("done", durability)


def test_parallel_sync_nodes_run_concurrently() -> None:
    barrier = threading.Barrier(2, timeout=10)

    def meet(name: str):  # type: ignore[no-untyped-def]
        def node(state: State) -> dict[str, Any]:
            barrier.wait()  # deadlocks (and times out) if the peers ran one after another
            return {"log": [name]}

        return node

    g = StateGraph(State)
    g.add_node("a", meet("a"))
    g.add_node("b", meet("b"))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    assert g.compile().invoke({"log": []})["log"] == ["a", "b"]


# -- tenants -------------------------------------------------------------------------


def test_same_thread_id_under_two_tenants_is_two_runs() -> None:
    g = StateGraph(State)
    g.add_node("a", appender("a"))
    g.set_entry_point("a")
    app = g.compile()
    app.invoke({"log": ["acme"]}, cfg("shared", tenant="acme"))
    app.invoke({"log": ["globex"]}, cfg("shared", tenant="globex"))
    app.invoke({"log": ["acme-again"]}, cfg("shared", tenant="acme"))
    assert app.get_state(cfg("shared", tenant="acme")).values["log"] == [
        "acme",
        "a",
        "acme-again",
        "a",
    ]
    assert app.get_state(cfg("shared", tenant="globex")).values["log"] == ["globex", "a"]
    assert app.get_state(cfg("shared")).values == {}  # the default tenant has no such run
    acme = app.store.get_run("acme", "shared")
    globex = app.store.get_run("globex", "shared")
    assert acme is not None and globex is not None
    assert (acme.step, globex.step) == (3, 1)
    assert [r.run_id for r in app.store.list_runs("globex")] == ["shared"]


def test_one_compiled_graph_serves_runs_from_several_threads() -> None:
    class Counting(TypedDict):
        log: Annotated[list[Any], operator.add]
        n: int

    def tick(state: Counting) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": [state["n"]]}

    g = StateGraph(Counting)
    g.add_node("tick", tick)
    g.add_node("side", lambda s: {"log": ["side"]})
    g.add_edge(START, "tick")
    g.add_edge(START, "side")
    g.add_conditional_edges("tick", lambda s: END if s["n"] >= 4 else "tick")
    app = g.compile()
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            for j in range(5):
                thread = f"c{k}-{j}"
                out = app.invoke({"n": 0, "log": []}, cfg(thread))
                assert out == {"n": 4, "log": ["side", 0, 1, 2, 3]}  # folded by node name
                assert app.get_state(cfg(thread)).values == out
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(app.store.list_runs("default", limit=100)) == 20


def test_async_lag_bound_is_configured_at_compile() -> None:
    from wayline.store.writer import AsyncSink

    class Tiny(TypedDict, total=False):
        n: int

    g = StateGraph(Tiny)
    g.add_node("inc", lambda s: {"n": s.get("n", 0) + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    app = g.compile(max_lag_steps=3, max_lag_ms=20)
    loop = app._loop({"configurable": {"thread_id": "lag"}}, "async")
    list(loop.begin({"n": 0}))
    try:
        assert isinstance(loop.sink, AsyncSink)
        assert (loop.sink.max_lag_steps, loop.sink.max_lag_s) == (3, 0.02)
    finally:
        loop.close(None)
