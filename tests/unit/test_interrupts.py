"""interrupt() and Command(resume=...): suspending, answering, and what runs again."""

from __future__ import annotations

import operator
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, Command, Interrupt, Send, StateGraph, interrupt
from wayline.errors import GraphInterrupt, ResumeError, WaylineError, WaylineSignal
from wayline.graph.compiled import CompiledGraph


class State(TypedDict):
    log: Annotated[list[Any], operator.add]


def cfg(thread: str = "t", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **configurable}}


def status(app: CompiledGraph, thread: str = "t", tenant: str = "default") -> str:
    run = app.store.get_run(tenant, thread)
    assert run is not None
    return run.status


def approval_graph(calls: Counter[str]) -> StateGraph:
    def propose(state: State) -> dict[str, Any]:
        calls["propose"] += 1
        return {"log": ["proposed"]}

    def approve(state: State) -> dict[str, Any]:
        calls["approve"] += 1
        answer = interrupt({"question": "ok?", "amount": (10, "EUR")})
        return {"log": [f"answer:{answer}"]}

    g = StateGraph(State)
    g.add_node("propose", propose)
    g.add_node("approve", approve)
    g.add_edge(START, "propose")
    g.add_edge("propose", "approve")
    g.add_edge("approve", END)
    return g


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_interrupt_suspends_and_resume_continues(durability: str) -> None:
    calls: Counter[str] = Counter()
    app = approval_graph(calls).compile()
    out = app.invoke({"log": []}, cfg(), durability=durability)
    (pending,) = out["__interrupt__"]
    assert isinstance(pending, Interrupt)
    assert pending.value == {"question": "ok?", "amount": (10, "EUR")}
    assert out["log"] == ["proposed"]
    assert status(app) == "interrupted"

    snap = app.get_state(cfg())
    assert snap.next == ("approve",)
    assert snap.interrupts == (pending,)
    (task,) = snap.tasks
    assert (task.name, task.interrupts) == ("approve", (pending,))

    done = app.invoke(Command(resume="yes"), cfg(), durability=durability)
    assert done == {"log": ["proposed", "answer:yes"]}
    assert status(app) == "done"
    assert calls == Counter(propose=1, approve=2)  # the node re-runs from its start
    assert app.get_state(cfg()).interrupts == ()


def test_resume_from_a_new_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    calls: Counter[str] = Counter()
    first = approval_graph(calls).compile(url)
    interrupted = first.invoke({"log": []}, cfg())
    first.store.close()
    second = approval_graph(calls).compile(url)
    assert second.get_state(cfg()).interrupts == tuple(interrupted["__interrupt__"])
    assert second.invoke(Command(resume=42), cfg())["log"] == ["proposed", "answer:42"]
    assert calls["propose"] == 1


def test_several_interrupts_in_one_node_are_answered_in_turn() -> None:
    runs: list[str] = []

    def ask(state: State) -> dict[str, Any]:
        runs.append("ask")
        name = interrupt("name?")
        age = interrupt("age?")
        return {"log": [name, age]}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.set_entry_point("ask")
    app = g.compile()
    first = app.invoke({"log": []}, cfg())
    assert [i.value for i in first["__interrupt__"]] == ["name?"]
    second = app.invoke(Command(resume="Ada"), cfg())
    assert [i.value for i in second["__interrupt__"]] == ["age?"]
    assert first["__interrupt__"][0].id != second["__interrupt__"][0].id
    assert app.invoke(Command(resume=36), cfg()) == {"log": ["Ada", 36]}
    assert runs == ["ask", "ask", "ask"]


def parallel_asks(calls: Counter[str]) -> StateGraph:
    def ask(name: str):  # type: ignore[no-untyped-def]
        def node(state: State) -> dict[str, Any]:
            calls[name] += 1
            return {"log": [f"{name}:{interrupt(f'q-{name}')}"]}

        return node

    def quick(state: State) -> dict[str, Any]:
        calls["quick"] += 1
        return {"log": ["quick"]}

    g = StateGraph(State)
    g.add_node("a", ask("a"))
    g.add_node("b", ask("b"))
    g.add_node("quick", quick)
    for name in ("a", "b", "quick"):
        g.add_edge(START, name)
        g.add_edge(name, END)
    return g


def test_two_interrupted_parallel_nodes_resumed_by_id() -> None:
    calls: Counter[str] = Counter()
    app = parallel_asks(calls).compile()
    out = app.invoke({"log": []}, cfg())
    ids = {i.value: i.id for i in out["__interrupt__"]}
    assert set(ids) == {"q-a", "q-b"}
    done = app.invoke(Command(resume={ids["q-a"]: 1, ids["q-b"]: 2}), cfg())
    assert done == {"log": ["a:1", "b:2", "quick"]}
    assert calls == Counter(a=2, b=2, quick=1)  # the finished peer did not run again


def test_parallel_interrupts_answered_one_at_a_time() -> None:
    calls: Counter[str] = Counter()
    app = parallel_asks(calls).compile()
    out = app.invoke({"log": []}, cfg())
    ids = {i.value: i.id for i in out["__interrupt__"]}
    partial = app.invoke(Command(resume={ids["q-b"]: "B"}), cfg())
    assert [i.id for i in partial["__interrupt__"]] == [ids["q-a"]]  # same question, same id
    assert status(app) == "interrupted"
    done = app.invoke(Command(resume={ids["q-a"]: "A"}), cfg())
    assert done == {"log": ["a:A", "b:B", "quick"]}
    assert calls == Counter(a=3, b=2, quick=1)


def test_snapshot_of_an_interrupted_step_shows_only_unfinished_tasks_as_next() -> None:
    calls: Counter[str] = Counter()
    app = parallel_asks(calls).compile()
    app.invoke({"log": []}, cfg())
    snap = app.get_state(cfg())
    assert snap.next == ("a", "b")  # as LangGraph: "quick" finished and will not run again
    by_name = {t.name: t for t in snap.tasks}
    assert by_name["quick"].result == {"log": ["quick"]}
    assert by_name["a"].result is None and len(by_name["a"].interrupts) == 1
    assert {i.value for i in snap.interrupts} == {"q-a", "q-b"}


def test_ambiguous_resume_is_refused_and_the_run_stays_interrupted() -> None:
    calls: Counter[str] = Counter()
    app = parallel_asks(calls).compile()
    out = app.invoke({"log": []}, cfg())
    with pytest.raises(ResumeError, match="2 pending interrupts"):
        app.invoke(Command(resume="which one?"), cfg())
    # as LangGraph's: a RuntimeError, saying the same first sentence
    with pytest.raises(RuntimeError, match="you must specify the interrupt id when resuming"):
        app.invoke(Command(resume="which one?"), cfg())
    with pytest.raises(ResumeError):
        app.invoke(Command(resume={"not-an-id": 1, "nor-this": 2}), cfg())
    assert status(app) == "interrupted"
    assert calls == Counter(a=1, b=1, quick=1)
    answers = {i.id: i.value.upper() for i in out["__interrupt__"]}
    assert app.invoke(Command(resume=answers), cfg())["log"] == ["a:Q-A", "b:Q-B", "quick"]


def test_resume_without_pending_interrupt_is_refused_and_changes_nothing() -> None:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.set_entry_point("a")
    app = g.compile()
    app.invoke({"log": []}, cfg())
    with pytest.raises(ResumeError, match="no pending interrupt"):
        app.invoke(Command(resume="late"), cfg())
    assert status(app) == "done"
    assert app.get_state(cfg()).values == {"log": ["a"]}


def test_new_input_on_an_interrupted_thread_discards_the_question() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"log": ["asked", interrupt("q")]}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.set_entry_point("ask")
    app = g.compile()
    first = app.invoke({"log": ["one"]}, cfg())
    second = app.invoke({"log": ["two"]}, cfg())
    assert second["log"] == ["one", "two"]
    assert second["__interrupt__"][0].id != first["__interrupt__"][0].id
    assert app.invoke(Command(resume="ans"), cfg())["log"] == ["one", "two", "asked", "ans"]


def test_interrupt_is_not_swallowed_by_except_exception() -> None:
    def careless(state: State) -> dict[str, Any]:
        try:
            value = interrupt("q")
        except Exception:  # a broad handler must not eat the suspension
            value = "swallowed"
        return {"log": [value]}

    assert issubclass(GraphInterrupt, WaylineSignal)
    assert not issubclass(GraphInterrupt, Exception)
    g = StateGraph(State)
    g.add_node("careless", careless)
    g.set_entry_point("careless")
    app = g.compile()
    assert "__interrupt__" in app.invoke({"log": []}, cfg())
    assert app.invoke(Command(resume="real"), cfg())["log"] == ["real"]


def test_interrupt_outside_a_node_is_an_error() -> None:
    with pytest.raises(WaylineError, match="outside a running node"):
        interrupt("nobody is listening")


def test_interrupt_in_stream_modes() -> None:
    calls: Counter[str] = Counter()
    app = approval_graph(calls).compile()
    chunks = list(app.stream({"log": []}, cfg(), stream_mode=["updates", "values"]))
    modes = [mode for mode, _ in chunks]
    assert modes == ["values", "updates", "values", "updates", "values"]
    _, update = chunks[3]
    (pending,) = update["__interrupt__"]
    assert pending.value["question"] == "ok?"
    # as LangGraph: the last values chunk is the state, with the pending questions
    assert chunks[4] == ("values", {"log": ["proposed"], "__interrupt__": (pending,)})


def test_interrupts_in_send_tasks_are_resumed_by_id() -> None:
    calls: list[int] = []

    def worker(arg: int) -> dict[str, Any]:
        calls.append(arg)
        return {"log": [f"{arg}:{interrupt(f'q{arg}')}"]}

    g = StateGraph(State)
    g.add_node("worker", worker)
    g.add_conditional_edges(START, lambda s: [Send("worker", i) for i in range(3)])
    app = g.compile()
    out = app.invoke({"log": []}, cfg())
    pending = out["__interrupt__"]
    assert [i.value for i in pending] == ["q0", "q1", "q2"]
    assert len({i.id for i in pending}) == 3
    assert app.get_state(cfg()).next == ("worker", "worker", "worker")
    done = app.invoke(Command(resume={i.id: i.value.upper() for i in pending}), cfg())
    assert done == {"log": ["0:Q0", "1:Q1", "2:Q2"]}
    assert sorted(calls) == [0, 0, 1, 1, 2, 2]  # each ran twice: asked, then answered


def test_a_single_interrupt_may_be_answered_by_id() -> None:
    calls: Counter[str] = Counter()
    app = approval_graph(calls).compile()
    (pending,) = app.invoke({"log": []}, cfg())["__interrupt__"]
    out = app.invoke(Command(resume={pending.id: "by-id"}), cfg())
    assert out["log"] == ["proposed", "answer:by-id"]
