"""A run runs only on its own graph: two graphs that share a default name (``State@1``) do
not run each other's runs, a reducer changed under the same version is refused naming the
channel and both reducers, and a migration carries such a run forward. SQLite and
PostgreSQL."""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, StateGraph, interrupt
from wayline.client import Wayline
from wayline.errors import GraphError, GraphMismatchError
from wayline.graph.compiled import CompiledGraph
from wayline.types import Command
from wayline.worker import Worker, WorkerConfig


def team_a(url: str) -> CompiledGraph:
    """One team's graph: its state class is called ``State``; it adds 1 four times."""

    class State(TypedDict):
        n: int

    g = StateGraph(State)
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["n"] < 4 else END)
    return g.compile(url)


def team_b(url: str) -> CompiledGraph:
    """Another team's, in another module: also ``State`` with ``n``; it sets n to 300."""

    class State(TypedDict):
        n: int

    g = StateGraph(State)
    g.add_node("hundreds", lambda s: {"n": 300})
    g.add_edge(START, "hundreds")
    g.add_edge("hundreds", END)
    return g.compile(url)


def drain(worker: Worker) -> None:
    """Run the worker until nothing it can claim is left."""
    while (
        claimed := worker.store.claim_next(
            owner=worker.owner, lease_seconds=30, graphs=worker.claims
        )
    ) is not None:
        worker.execute(*claimed)


def test_same_named_graphs_do_not_run_each_others_runs(url: str) -> None:
    a, b = team_a(url), team_b(url)
    assert (a.name, a.version) == (b.name, b.version) == ("State", "1")
    assert a.fingerprint != b.fingerprint
    client = Wayline(url)
    client.start(b, {"n": 0}, run_id="b-run")

    drain(Worker(url, a))  # team A's worker: the run is not its graph's
    waiting = client.get("b-run")
    assert (waiting.status, waiting.step, waiting.fingerprint) == ("pending", -1, b.fingerprint)

    drain(Worker(url, b))
    done = client.get("b-run")
    assert done.status == "done"
    assert b.get_state({"configurable": {"thread_id": "b-run"}}).values == {"n": 300}


def test_a_process_refuses_two_graphs_of_one_name_and_version(url: str) -> None:
    with pytest.raises(GraphError, match=r"two graphs named State@1 with different shapes"):
        Worker(url, [team_a(url), team_b(url)])
    Worker(url, [team_a(url), team_a(url)])  # the same graph twice is one graph


def test_in_process_resume_on_another_shape_is_refused(url: str) -> None:
    a, b = team_a(url), team_b(url)
    cfg = {"configurable": {"thread_id": "t"}}
    assert a.invoke({"n": 0}, cfg) == {"n": 4}
    with pytest.raises(GraphMismatchError, match=r"node\(s\) \['inc'\] are not in this graph"):
        b.invoke({"n": 0}, cfg)
    assert a.get_state(cfg).values == {"n": 4}


class Log(TypedDict):
    log: Annotated[list[int], operator.add]
    asked: Any


def replace(old: list[int], new: list[int]) -> list[int]:
    return new


class Replaced(TypedDict):
    log: Annotated[list[int], replace]
    asked: Any


def logging_graph(state: type, version: str = "1") -> StateGraph:
    g = StateGraph(state, name="logger", version=version)
    g.add_node("first", lambda s: {"log": [1]})
    g.add_node("ask", lambda s: {"asked": interrupt("go on?"), "log": [2]})
    g.add_edge(START, "first")
    g.add_edge("first", "ask")
    g.add_edge("ask", END)
    return g


def test_a_reducer_changed_under_the_same_version_is_refused_then_migrated(url: str) -> None:
    cfg = {"configurable": {"thread_id": "r"}}
    old = logging_graph(Log).compile(url)
    old.invoke({"log": [0]}, cfg)
    before = old.get_state(cfg)
    assert before.values["log"] == [0, 1] and before.next == ("ask",)

    changed = logging_graph(Replaced).compile(url)
    with pytest.raises(GraphMismatchError) as refused:
        changed.invoke(Command(resume="yes"), cfg)
    message = str(refused.value)
    assert "channel 'log'" in message and "operator.add" in message
    assert "test_identity.replace" in message and "'r'" in message
    after = old.get_state(cfg)
    assert (after.values, after.next) == (before.values, before.next)  # nothing changed
    run = old.store.get_run("default", "r")
    assert run is not None
    assert (run.status, run.fingerprint, run.error) == ("interrupted", old.fingerprint, None)

    # Carried forward on purpose: a version of its own and a migration.
    new = logging_graph(Replaced, version="2").migrate("1", "2", lambda v: v).compile(url)
    moved = Wayline(url).migrate("r", old, new)
    assert (moved.graph_version, moved.fingerprint) == ("2", new.fingerprint)
    assert new.invoke(Command(resume="yes"), cfg)["log"] == [2]  # replaced, as v2 says
    assert new.verify(cfg).ok


def test_the_unchanged_graph_resumes_with_every_item(url: str) -> None:
    cfg = {"configurable": {"thread_id": "u"}}
    logging_graph(Log).compile(url).invoke({"log": [0]}, cfg)
    again = logging_graph(Log).compile(url)  # a new process's compile: the same shape
    assert again.invoke(Command(resume="yes"), cfg)["log"] == [0, 1, 2]


def test_a_worker_started_on_another_shape_leaves_the_run_waiting(url: str) -> None:
    """A fleet where the new code was deployed under the old version: the paused run is not
    taken by the new workers, and is taken as soon as a worker of its own shape runs."""
    client = Wayline(url)
    old = logging_graph(Log).compile(url)
    client.start(old, {"log": [0]}, run_id="w")
    drain(Worker(url, old))
    assert client.get("w").status == "interrupted"
    client.resume("w", "yes")
    drain(Worker(url, logging_graph(Replaced).compile(url)))
    assert client.get("w").status == "pending"
    worker = Worker(url, logging_graph(Log).compile(url), WorkerConfig(poll_interval=0.02))
    thread = threading.Thread(target=worker.run, kwargs={"max_runs": 1})
    thread.start()
    thread.join(30)
    assert client.get("w").status == "done"
    assert old.get_state({"configurable": {"thread_id": "w"}}).values["log"] == [0, 1, 2]
