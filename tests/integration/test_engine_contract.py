"""The engine seam's contract (``wayline.worker.engine``), run against both engines: the
same graphs written for wayline's loop and for LangGraph's, executed by one worker that
sees only the seam. Each case claims a run the way a worker does and hands it over.

Every engine: runs a run to its end and says so on the row (status, step, lease given
up, input consumed, which engine); parks an interrupt with no worker held and continues
it after an authorized decision; writes nothing under a lease it lost; reports a node
error for the worker's retries and then its dead letter; records that a cancel stopped it.
"""

from __future__ import annotations

import operator
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import langgraph.graph as lg
import langgraph.types as lg_types
import pytest

import wayline
from wayline.client import Wayline
from wayline.control.approvals import Actor
from wayline.effects import RetryPolicy
from wayline.effects.retry import retry_any
from wayline.langgraph.engine import LangGraphEngine
from wayline.store.base import Store
from wayline.worker import Worker, WorkerConfig
from wayline.worker.engine import Engine, Lease, WaylineEngine
from wayline.worker.engines import engine_for

STEPS = 3
INPUT = {"log": [], "n": 0}


class S(TypedDict, total=False):
    log: Annotated[list[int], operator.add]
    n: int
    decision: Any


def _step(state: S) -> dict[str, Any]:
    if state.get("n", 0) < 0:
        raise RuntimeError("n went negative")
    return {"log": [state["n"]], "n": state["n"] + 1}


def _route(state: S) -> str:
    return "step" if 0 <= state["n"] < STEPS else "__end__"


def wayline_graphs(store: Store) -> dict[str, Engine]:
    count = wayline.StateGraph(S, name="count")
    count.add_node("step", _step)
    count.add_edge(wayline.START, "step")
    count.add_conditional_edges("step", _route)

    def review(state: S) -> dict[str, Any]:
        return {"decision": wayline.interrupt({"n": state["n"]}, approvers=["finance"])}

    ask = wayline.StateGraph(S, name="ask")
    ask.add_node("step", _step)
    ask.add_node("review", review)
    ask.add_edge(wayline.START, "step")
    ask.add_edge("step", "review")
    return {"count": engine_for(count.compile(store)), "ask": engine_for(ask.compile(store))}


def langgraph_graphs(store: Store) -> dict[str, Engine]:
    count = lg.StateGraph(S)
    count.add_node("step", _step)
    count.add_edge(lg.START, "step")
    count.add_conditional_edges("step", _route)

    def review(state: S) -> dict[str, Any]:
        return {"decision": lg_types.interrupt({"n": state["n"]})}

    ask = lg.StateGraph(S)
    ask.add_node("step", _step)
    ask.add_node("review", review)
    ask.add_edge(lg.START, "step")
    ask.add_edge("step", "review")
    return {
        "count": engine_for(count.compile(name="count")).bind(store),
        "ask": LangGraphEngine(
            ask.compile(name="ask"), approvers={"review": ["finance"]}, store=store
        ),
    }


@pytest.fixture(params=["wayline", "langgraph"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "sqlite":
        return wayline.connect(f"sqlite:///{tmp_path / 'contract.db'}")
    return wayline.connect(str(request.getfixturevalue("pg_url")))


@pytest.fixture
def graphs(kind: str, store: Store) -> dict[str, Engine]:
    made = wayline_graphs(store) if kind == "wayline" else langgraph_graphs(store)
    assert {e.kind for e in made.values()} == {kind}
    return made


def worker_for(store: Store, graphs: dict[str, Engine], **config: Any) -> Worker:
    return Worker(store, list(graphs.values()), WorkerConfig(lease_seconds=30, **config))


def claim_and_execute(worker: Worker) -> str:
    claimed = worker.store.claim_next(owner=worker.owner, lease_seconds=30, graphs=worker.claims)
    assert claimed is not None, "a run is claimable"
    worker.execute(*claimed)
    return claimed[0].run_id


def values(kind: str, store: Store, graphs: dict[str, Engine], name: str, run_id: str) -> Any:
    engine = graphs[name]
    if isinstance(engine, WaylineEngine):
        snap = engine.graph.get_state({"configurable": {"thread_id": run_id}})
    else:
        assert isinstance(engine, LangGraphEngine)
        snap = engine._bound.get_state({"configurable": {"thread_id": run_id}})
    return dict(snap.values)


def test_a_run_runs_to_its_end_and_the_row_says_so(
    kind: str, store: Store, graphs: dict[str, Engine]
) -> None:
    client = Wayline(store)
    client.start(graphs["count"], INPUT, run_id="r")
    queued = client.get("r")
    assert (queued.engine, queued.status) == (kind, "pending")
    assert claim_and_execute(worker_for(store, graphs)) == "r"
    run = client.get("r")
    assert (run.status, run.engine, run.lease_owner, run.inbox) == ("done", kind, None, None)
    assert run.step == STEPS  # the input step, then one per node
    assert values(kind, store, graphs, "count", "r") == {"log": [0, 1, 2], "n": 3}


def test_an_interrupt_parks_with_no_worker_and_an_approval_continues_it(
    kind: str, store: Store, graphs: dict[str, Engine]
) -> None:
    client = Wayline(store)
    client.start(graphs["ask"], INPUT, run_id="a")
    worker = worker_for(store, graphs)
    claim_and_execute(worker)
    run = client.get("a")
    assert (run.status, run.lease_owner) == ("interrupted", None)
    (question,) = client.pending("a")
    assert (question.value, question.approvers) == ({"n": 1}, ("finance",))
    with pytest.raises(wayline.errors.ApprovalRefused):
        client.resume("a", "yes", actor=Actor(id="eve"), digest=question.digest)
    client.resume("a", "yes", actor=Actor(id="al", roles=("finance",)), digest=question.digest)
    claim_and_execute(worker)
    assert client.get("a").status == "done"
    final = values(kind, store, graphs, "ask", "a")
    assert final == {"log": [0], "n": 1, "decision": "yes"}
    outcomes = [(a.actor, a.outcome) for a in client.audit("a")]
    assert ("eve", "refused") in outcomes and ("al", "accepted") in outcomes


def test_a_lost_lease_writes_nothing(store: Store, graphs: dict[str, Engine]) -> None:
    client = Wayline(store)
    client.start(graphs["count"], INPUT, run_id="l")
    worker = worker_for(store, graphs)
    claimed = store.claim_next(owner=worker.owner, lease_seconds=30, graphs=worker.claims)
    assert claimed is not None
    before = store.count_rows("default", "l")
    store.claim("default", "l", owner="another", lease_seconds=30, steal=True)
    worker.execute(*claimed)  # LeaseLost: logged, the run left to its holder
    assert store.count_rows("default", "l") == before
    run = client.get("l")
    assert (run.step, run.lease_owner) == (-1, "another")
    assert run.inbox is not None  # the input waits for the holder


def test_a_node_error_is_retried_then_dead_lettered(
    store: Store, graphs: dict[str, Engine]
) -> None:
    client = Wayline(store)
    client.start(graphs["count"], {"log": [], "n": -1}, run_id="f")
    retry = RetryPolicy(max_attempts=2, initial_delay=0.0, max_delay=0.0, retry_on=retry_any)
    worker = worker_for(store, graphs, retry=retry)
    claim_and_execute(worker)
    run = client.get("f")
    assert (run.status, run.attempts, run.lease_owner) == ("pending", 1, None)  # a retry
    assert "n went negative" in str(run.error)
    claim_and_execute(worker)
    run = client.get("f")
    assert run.status == "failed" and "n went negative" in str(run.error)  # dead letter
    assert store.claim_next(owner="x", lease_seconds=30, graphs=worker.claims) is None


def test_a_requested_cancel_stops_the_run_as_cancelled(
    store: Store, graphs: dict[str, Engine]
) -> None:
    client = Wayline(store)
    client.start(graphs["count"], INPUT, run_id="c")
    worker = worker_for(store, graphs)
    claimed = store.claim_next(owner=worker.owner, lease_seconds=30, graphs=worker.claims)
    assert claimed is not None
    run, token = claimed
    stop = threading.Event()
    lease = Lease(owner=worker.owner, lease_seconds=30, token=token, stop=stop)
    execution = worker.graphs[(run.graph_name, run.graph_version)].open(run, lease)
    execution.cancel()  # what a heartbeat does when it reads the request
    stop.set()
    assert execution.run() == "cancelled"
    run = client.get("c")
    assert (run.status, run.lease_owner) == ("cancelled", None)


def _extend(old: list[int], new: list[int]) -> list[int]:
    return [*old, *new]


class OtherS(TypedDict, total=False):
    log: Annotated[list[int], _extend]  # another reducer: the same nodes, another shape
    n: int
    decision: Any


def other_count(kind: str, store: Store) -> Engine:
    """``count`` with another reducer on ``log``: same name, same version, other shape."""
    if kind == "wayline":
        g = wayline.StateGraph(OtherS, name="count")
        g.add_node("step", _step)
        g.add_edge(wayline.START, "step")
        g.add_conditional_edges("step", _route)
        return engine_for(g.compile(store))
    lgg = lg.StateGraph(OtherS)
    lgg.add_node("step", lambda s: _step(s))  # unannotated: LangGraph reads S from _step
    lgg.add_edge(lg.START, "step")
    lgg.add_conditional_edges("step", lambda s: _route(s))
    return engine_for(lgg.compile(name="count")).bind(store)


def test_a_run_of_another_shape_is_not_claimed_nor_opened(
    kind: str, store: Store, graphs: dict[str, Engine]
) -> None:
    other = other_count(kind, store)
    mine = graphs["count"]
    assert (other.name, other.version) == (mine.name, mine.version)
    assert other.fingerprint and other.fingerprint != mine.fingerprint
    Wayline(store).start(other, INPUT, run_id="o")
    run = store.get_run("default", "o")
    assert run is not None and (run.fingerprint, run.engine) == (other.fingerprint, kind)
    worker = worker_for(store, graphs)
    assert store.claim_next(owner=worker.owner, lease_seconds=30, graphs=worker.claims) is None
    token = store.claim("default", "o", owner="test", lease_seconds=30)
    lease = Lease(owner="test", lease_seconds=30, token=token, stop=threading.Event())
    claimed = store.get_run("default", "o")
    assert claimed is not None
    with pytest.raises(wayline.errors.GraphMismatchError, match="'log'"):
        mine.open(claimed, lease).run()
    store.release("default", "o", token)
    assert claim_and_execute(worker_for(store, {"count": other})) == "o"  # its own graph runs it
    assert Wayline(store).get("o").status == "done"


def test_a_schedule_fired_run_carries_the_graphs_fingerprint(
    kind: str, store: Store, graphs: dict[str, Engine]
) -> None:
    from wayline.store.schedules import schedules

    client = Wayline(store)
    made = client.schedule(graphs["count"], INPUT, cron="0 9 * * *", schedule_id="daily")
    assert (made.fingerprint, made.engine) == (graphs["count"].fingerprint, kind)
    book = schedules(store)
    assert book is not None
    ph = store.placeholder  # type: ignore[attr-defined]
    with store._tx("default") as db:  # type: ignore[attr-defined]  # due now, not at 09:00
        db.execute(f"UPDATE schedules SET next_at = {ph}", (time.time() - 1,))
    (fired,) = book.fire_due([(made.graph_name, made.graph_version)])
    run = client.get(fired.run_id)
    assert (run.fingerprint, run.engine) == (graphs["count"].fingerprint, kind)
    other = worker_for(store, {"count": other_count(kind, store)})
    assert store.claim_next(owner="o", lease_seconds=30, graphs=other.claims) is None
    assert claim_and_execute(worker_for(store, graphs)) == fired.run_id
    assert values(kind, store, graphs, "count", fired.run_id) == {"log": [0, 1, 2], "n": 3}
