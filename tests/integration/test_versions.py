"""Versioned resume on SQLite and PostgreSQL: a run continues on the version that wrote it,
a graph that no longer fits is refused with nothing changed, a migration carries a run on."""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, StateGraph, interrupt
from wayline.client import Wayline
from wayline.errors import VersionMismatchError
from wayline.worker import Worker, WorkerConfig

CFG = {"configurable": {"thread_id": "t1"}}


class V1(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]
    ticket: str
    verdict: str


class V2(TypedDict, total=False):
    comments: Annotated[list[str], operator.add]
    ticket: str
    verdict: str
    priority: int


def v1(review_name: str = "review", state: type = V1, key: str = "notes") -> StateGraph:
    g = StateGraph(state, name="triage", version="1")
    g.add_node("intake", lambda s: {key: [f"got {s['ticket']}"]})
    g.add_node(review_name, lambda s: {"verdict": interrupt({"ticket": s["ticket"]})})
    g.add_node("close", lambda s: {key: ["closed"]})
    g.add_edge(START, "intake")
    g.add_edge("intake", review_name)
    g.add_edge(review_name, "close")
    g.add_edge("close", END)
    return g


def v2() -> StateGraph:
    g = StateGraph(V2, name="triage", version="2")
    g.add_node("intake", lambda s: {"comments": [f"got {s['ticket']}"]})
    g.add_node("review", lambda s: {"verdict": interrupt({"ticket": s["ticket"]})})
    g.add_node("close", lambda s: {"comments": [f"closed at priority {s['priority']}"]})
    g.add_edge(START, "intake")
    g.add_edge("intake", "review")
    g.add_edge("review", "close")
    g.add_edge("close", END)

    def carry(values: dict[str, Any]) -> dict[str, Any]:
        values["comments"] = values.pop("notes")
        values["priority"] = 2
        return values

    return g.migrate("1", "2", carry)


def paused(url: str) -> tuple[Any, Any]:
    app = v1().compile(url)
    app.invoke({"ticket": "T-7", "notes": []}, CFG)
    return app, app.get_state(CFG)


@pytest.mark.parametrize(
    ("graph", "match"),
    [
        (lambda: v2(), r"written by triage@1, this graph is triage@2"),
        (lambda: v1(review_name="inspect"), r"node\(s\) \['review'\] are not in this graph"),
        (lambda: v1(state=V2, key="comments"), r"channel 'notes' was .*this graph has no such"),
    ],
    ids=["other-version", "renamed-node", "removed-key"],
)
def test_a_graph_that_no_longer_fits_is_refused_and_the_run_left_intact(
    url: str, graph: Any, match: str
) -> None:
    app, before = paused(url)
    with pytest.raises(VersionMismatchError, match=match):
        graph().compile(url).invoke(None, CFG)
    after = app.get_state(CFG)
    assert (after.values, after.next, after.interrupts) == (
        before.values,
        before.next,
        before.interrupts,
    )
    run = app.store.get_run("default", "t1")
    assert (run.status, run.graph_version, run.error) == ("interrupted", "1", None)


def test_a_migration_carries_a_waiting_run_forward(url: str) -> None:
    old, before = paused(url)
    new = v2().compile(url)
    client = Wayline(old.store)
    moved = client.migrate("t1", old, new)
    assert (moved.graph_version, moved.schema_version) == ("2", new.schema_version)
    state = new.get_state(CFG)
    assert state.values == {"comments": ["got T-7"], "ticket": "T-7", "priority": 2}
    assert state.interrupts[0].id == before.interrupts[0].id  # the question still stands
    with pytest.raises(VersionMismatchError):  # the old code can no longer touch it
        old.invoke(None, CFG)
    client.resume("t1", "approved")
    final = new.invoke(None, CFG)
    assert final["comments"] == ["got T-7", "closed at priority 2"]
    assert final["verdict"] == "approved"
    assert new.verify(CFG).ok
    assert [a.action for a in client.audit("t1")][-2:] == ["migrate", "decide"]


def test_a_migration_that_does_not_fit_changes_nothing(url: str) -> None:
    old, before = paused(url)
    broken = v2()
    broken.migrations["1"] = lambda values: {**values, "undeclared": 1}
    with pytest.raises(Exception, match="undeclared"):
        Wayline(old.store).migrate("t1", old, broken.compile(url))
    assert old.get_state(CFG).values == before.values
    assert old.store.get_run("default", "t1").graph_version == "1"


def test_workers_serve_versions_side_by_side(url: str) -> None:
    old, new = v1().compile(url), v2().compile(url)
    client = Wayline(url)
    client.start(old, {"ticket": "A", "notes": []}, run_id="a")
    client.start(new, {"ticket": "B", "comments": [], "priority": 1}, run_id="b")
    worker = Worker(url, [old, new], WorkerConfig(poll_interval=0.02))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert client.wait("a", 20).status == "interrupted"
        assert client.wait("b", 20).status == "interrupted"
        client.resume("a", "ok")
        client.resume("b", "ok")
        assert client.wait("a", 20).status == "done"
        assert client.wait("b", 20).status == "done"
    finally:
        worker.stop()
        thread.join()
    assert old.get_state({"configurable": {"thread_id": "a"}}).values["notes"][-1] == "closed"
    b = new.get_state({"configurable": {"thread_id": "b"}}).values
    assert b["comments"][-1] == "closed at priority 1"
