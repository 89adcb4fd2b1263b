"""Runs that cannot start or cannot go on end in a visible state, claimed a bounded number
of times, with their lease released; bad modes and ids are refused before anything is
queued; derived effect keys are new for a run started again under a purged run's id."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, Command, StateGraph
from wayline.client import Wayline
from wayline.codec import default_codec
from wayline.errors import ConfigError, ResumeError
from wayline.graph.checkpoint import encode_inbox
from wayline.graph.compiled import CompiledGraph
from wayline.graph.context import NodeContext
from wayline.store.base import Store
from wayline.worker import Worker


class S(TypedDict):
    log: Annotated[list[str], operator.add]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = (
        f"sqlite:///{tmp_path / 'stuck.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    s = wayline.connect(url)
    yield s
    s.close()


def graph(store: Store, keys: list[str] | None = None) -> CompiledGraph:
    def pay(s: S, ctx: NodeContext) -> dict[str, Any]:
        def charge(key: str) -> str:
            if keys is not None:
                keys.append(key)
            return "ok"

        ctx.effect("charge", charge, request={"amount": 1})
        return {"log": ["paid"]}

    g = StateGraph(S, name="stuck")
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    return g.compile(store)


def claims(store: Store, run_id: str) -> int:
    """Every claim increments the fencing token: the token counts claims."""
    run = store.get_run("default", run_id)
    assert run is not None
    return run.fencing_token


def graphs_of(app: CompiledGraph) -> list[tuple[str, str, str]]:
    return [(app.name, app.version, app.fingerprint), (app.name, app.version, "")]


@pytest.mark.parametrize("nothing", [None, Command(resume="yes")])
def test_nothing_to_start_creates_no_run(store: Store, nothing: Any) -> None:
    app = graph(store)
    with pytest.raises(ResumeError, match="start it with an input"):
        app.invoke(nothing, {"configurable": {"thread_id": "ghost"}})
    assert store.get_run("default", "ghost") is None
    assert store.claim_next(owner="w", lease_seconds=30, graphs=graphs_of(app)) is None
    with pytest.raises(ConfigError, match="needs an input"):
        Wayline(store).start(app, None, run_id="ghost")
    assert store.get_run("default", "ghost") is None


def test_a_run_that_cannot_start_is_claimed_once_and_left_failed(store: Store) -> None:
    app = graph(store)
    # A row with nothing to run, as older versions left them (invoke(None) on a new thread).
    store.create_run(
        "default", "empty", graph_name=app.name, graph_version=app.version, durability="sync"
    )
    Worker(store, app).run(max_runs=1)
    run = store.get_run("default", "empty")
    assert run is not None and run.status == "failed" and run.lease_owner is None
    assert "no input" in (run.error or "")
    assert claims(store, "empty") == 1
    assert store.claim_next(owner="w", lease_seconds=30, graphs=graphs_of(app)) is None
    assert claims(store, "empty") == 1


def test_a_mistyped_durability_is_refused_before_it_is_queued(store: Store) -> None:
    app = graph(store)
    with pytest.raises(ConfigError, match="'asnyc'"):
        Wayline(store).start(app, {"log": []}, run_id="typo", durability="asnyc")
    assert store.get_run("default", "typo") is None
    with pytest.raises(ConfigError, match="'asnyc'"):
        app.invoke({"log": []}, {"configurable": {"thread_id": "typo"}}, durability="asnyc")
    assert store.get_run("default", "typo") is None


def test_a_queued_run_with_an_unknown_mode_fails_visibly_and_releases(store: Store) -> None:
    app = graph(store)
    inbox = encode_inbox(default_codec, {"log": []})
    store.enqueue(
        "default",
        "legacy",
        inbox,
        graph_name=app.name,
        graph_version=app.version,
        durability="asnyc",
    )  # queued by an older client that did not check
    Worker(store, app).run(max_runs=1)
    run = store.get_run("default", "legacy")
    assert run is not None and run.status == "failed" and run.lease_owner is None
    assert "'asnyc'" in (run.error or "") and claims(store, "legacy") == 1
    assert store.claim_next(owner="w", lease_seconds=30, graphs=graphs_of(app)) is None


@pytest.mark.parametrize("bad", [{}, {"thread_id": None}, {"thread_id": ""}])
def test_a_checkpointed_graph_needs_a_thread_id(store: Store, bad: dict[str, Any]) -> None:
    app = graph(store)
    with pytest.raises(ConfigError, match="thread_id"):
        app.invoke({"log": []}, {"configurable": bad})
    with pytest.raises(ValueError):  # LangGraph raises ValueError: ported handlers still work
        app.invoke({"log": []}, {"configurable": bad})
    assert store.list_runs("default") == []


def test_thread_zero_is_the_run_zero(store: Store) -> None:
    app = graph(store)
    app.invoke({"log": ["a"]}, {"configurable": {"thread_id": 0}})
    app.invoke({"log": ["b"]}, {"configurable": {"thread_id": 0}})
    assert [r.run_id for r in store.list_runs("default")] == ["0"]
    assert app.get_state({"configurable": {"thread_id": "0"}}).values["log"] == [
        "a",
        "paid",
        "b",
        "paid",
    ]


def test_derived_effect_keys_are_new_after_a_purge(store: Store) -> None:
    keys: list[str] = []
    app = graph(store, keys)
    cfg = {"configurable": {"thread_id": "pay-1"}}
    app.invoke({"log": []}, cfg)
    Wayline(store).purge("pay-1")
    app.invoke({"log": []}, cfg)
    assert len(keys) == 2 and keys[0] != keys[1]  # a provider would not return the old charge
    business: list[str] = []

    def by_business_key(s: S, ctx: NodeContext) -> dict[str, Any]:
        ctx.effect("refund", business.append, key="refund-request-9", request={})
        return {"log": ["refunded"]}

    g = StateGraph(S, name="business")
    g.add_node("refund", by_business_key)
    g.add_edge(START, "refund")
    g.add_edge("refund", END)
    b = g.compile(store)
    b.invoke({"log": []}, {"configurable": {"thread_id": "r-1"}})
    Wayline(store).purge("r-1")
    b.invoke({"log": []}, {"configurable": {"thread_id": "r-1"}})
    assert business == ["refund-request-9", "refund-request-9"]  # business keys as given
