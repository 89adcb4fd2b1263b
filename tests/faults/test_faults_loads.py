"""A run that cannot be read (a type this process does not know, a corrupt row, an
encrypted store opened without keys, a graph that does not fit) is never rewound, through
``invoke`` or through a worker: its committed steps stay reachable, the reason is recorded
beside it, and once the cause is fixed it continues from its last committed step."""

from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from fault_rows import flip_row as flip
from fault_rows import pick
from fault_rows import restore_row as restore

import wayline
from wayline import END, START, StateGraph, interrupt
from wayline.client import Wayline
from wayline.codec import Codec
from wayline.effects.retry import RetryPolicy
from wayline.errors import CodecError, CorruptionError, KeysRequiredError, VersionMismatchError
from wayline.graph.compiled import CompiledGraph
from wayline.store.base import Store
from wayline.store.encrypted import StaticKeys
from wayline.worker import Worker, WorkerConfig


@dataclasses.dataclass
class Point:
    x: int
    y: int


class S(TypedDict):
    points: Annotated[list[Any], operator.add]
    n: int
    answer: str


STEPS = 12


def build(store: Store, codec: Codec, *, nodes: tuple[str, str] = ("walk", "ask")) -> CompiledGraph:
    walk, ask_name = nodes

    def step(s: S) -> dict[str, Any]:
        return {"points": [Point(s["n"], -s["n"])], "n": s["n"] + 1}

    def ask(s: S) -> dict[str, Any]:
        return {"answer": interrupt({"n": s["n"]})}

    g = StateGraph(S, name="loads", codec=codec)
    g.add_node(walk, step)
    g.add_node(ask_name, ask)
    g.add_edge(START, walk)
    g.add_conditional_edges(walk, lambda s: walk if s["n"] < STEPS else ask_name)
    g.add_edge(ask_name, END)
    return g.compile(store, snapshot_every=5)


def knowing(*types: type) -> Codec:
    codec = Codec()
    for t in types:
        codec.register(t, "tests.Point")
    return codec


CFG = {"configurable": {"thread_id": "r"}}
INPUT = {"points": [], "n": 0, "answer": ""}


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'loads.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    s = wayline.connect(url)
    yield s
    s.close()


def expected_final() -> dict[str, Any]:
    app = build(wayline.connect("sqlite:///:memory:"), knowing(Point))
    app.invoke(INPUT, CFG)
    return app.invoke(wayline.Command(resume="yes"), CFG)


def waiting(store: Store) -> CompiledGraph:
    app = build(store, knowing(Point))
    assert "__interrupt__" in app.invoke(INPUT, CFG)
    return app


def row(store: Store) -> tuple[str, int]:
    run = store.get_run("default", "r")
    assert run is not None
    return run.status, run.step


def one_shot_worker(store: Store, app: CompiledGraph) -> Worker:
    return Worker(store, app, WorkerConfig(retry=RetryPolicy(max_attempts=1), lease_seconds=30))


# -- an unregistered type ---------------------------------------------------------------


def test_unknown_type_through_invoke_keeps_the_run(store: Store) -> None:
    waiting(store)
    stranger = build(store, knowing())
    with pytest.raises(CodecError, match="not registered"):
        stranger.invoke(wayline.Command(resume="yes"), CFG)
    assert row(store) == ("interrupted", STEPS)
    run = store.get_run("default", "r")
    assert run is not None and "not registered" in (run.error or "")
    with pytest.raises(CodecError):
        stranger.invoke(INPUT, CFG)  # new input cannot land on a run that cannot be read
    assert row(store) == ("interrupted", STEPS)
    assert build(store, knowing(Point)).invoke(wayline.Command(resume="yes"), CFG) == (
        expected_final()
    )


def test_unknown_type_on_a_finished_run_keeps_it_done(store: Store) -> None:
    app = waiting(store)
    app.invoke(wayline.Command(resume="yes"), CFG)
    assert row(store) == ("done", STEPS + 1)
    with pytest.raises(CodecError):
        build(store, knowing()).invoke(None, CFG)
    assert row(store) == ("done", STEPS + 1)  # not "failed at step -1"
    assert build(store, knowing(Point)).get_state(CFG).values == expected_final()


def test_unknown_type_through_a_worker_keeps_the_run(store: Store) -> None:
    waiting(store)
    Wayline(store).resume("r", "yes")
    stranger = build(store, knowing())
    one_shot_worker(store, stranger).run(max_runs=1)
    assert row(store) == ("failed", STEPS)  # visible, with why, at its committed step
    run = store.get_run("default", "r")
    assert run is not None and "not registered" in (run.error or "") and run.lease_owner is None
    assert store.requeue("default", "r")
    one_shot_worker(store, build(store, knowing(Point))).run(max_runs=1)
    assert row(store) == ("done", STEPS + 1)
    assert build(store, knowing(Point)).get_state(CFG).values == expected_final()


# -- a corrupt row -------------------------------------------------------------------------


def test_corrupt_row_through_a_worker_keeps_the_run(store: Store) -> None:
    app = waiting(store)
    Wayline(store).resume("r", "yes")
    damaged = pick(store, "deltas", "r")
    flip(store, "deltas", damaged)
    one_shot_worker(store, app).run(max_runs=1)
    assert row(store) == ("failed", STEPS)
    run = store.get_run("default", "r")
    assert run is not None and "corrupt" in (run.error or "")
    with pytest.raises(CorruptionError):
        app.get_state(CFG)
    restore(store, "deltas", damaged)
    assert store.requeue("default", "r")
    one_shot_worker(store, app).run(max_runs=1)
    assert app.get_state(CFG).values == expected_final()


# -- keys ----------------------------------------------------------------------------------


def test_keyless_open_of_an_encrypted_store_is_refused_everywhere(url: str) -> None:
    keys = StaticKeys({"default": {"k": os.urandom(32)}}, {"default": "k"})
    sealed = wayline.connect(url, keys=keys)
    waiting(sealed)
    with pytest.raises(KeysRequiredError):
        wayline.connect(url)
    with pytest.raises(KeysRequiredError):
        Worker(url, build(sealed, knowing(Point)))
    with pytest.raises(KeysRequiredError):
        build(url, knowing(Point))  # type: ignore[arg-type]
    assert row(sealed) == ("interrupted", STEPS)
    assert build(sealed, knowing(Point)).invoke(wayline.Command(resume="yes"), CFG) == (
        expected_final()
    )
    sealed.close()


# -- a graph that does not fit -----------------------------------------------------------


def test_a_graph_that_does_not_fit_changes_nothing(store: Store) -> None:
    waiting(store)
    renamed = build(store, knowing(Point), nodes=("walk", "question"))
    with pytest.raises(VersionMismatchError):
        renamed.invoke(wayline.Command(resume="yes"), CFG)
    assert row(store) == ("interrupted", STEPS)
    Wayline(store).resume("r", "yes")
    # A worker of the other shape does not take it (its fingerprint is not the run's): the
    # run waits, kept, for a worker that has its graph.
    other = one_shot_worker(store, renamed)
    assert store.claim_next(owner="w", lease_seconds=30, graphs=other.claims) is None
    assert row(store) == ("pending", STEPS)
    one_shot_worker(store, build(store, knowing(Point))).run(max_runs=1)
    assert build(store, knowing(Point)).get_state(CFG).values == expected_final()
