"""The instrument sees every byte: a workload that takes every write path, then the meter
is audited against what the tables hold, and the schema against the metered tables."""

from __future__ import annotations

import hashlib
import operator
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, Command, StateGraph, interrupt
from wayline.client import Wayline
from wayline.codec import default_codec
from wayline.errors import StoreError
from wayline.graph.segments import FANOUT
from wayline.instrument import byte_report
from wayline.store.base import Store
from wayline.store.lg_records import LG_TABLES
from wayline.store.records import (
    METERED_TABLES,
    CommitBatch,
    DeltaRecord,
    SegmentRecord,
    SnapshotRecord,
)

EXEMPT_TABLES = {
    "meter",
    "blob_refs",
    "wayline_meta",
    "audit",
    "api_keys",
    "threads",
    "thread_runs",
    "subject_keys",
    "memory_items",
    "memory_history",
    "memory_vectors",
    "schedules",
    "assistants",
    "assistant_versions",
    "metric_samples",
}
"""Tables without run payload: the meter itself, blob references, schema version, the
audit log (actors, digests and outcomes, never a payload), and the server's API keys,
threads and API runs (metadata; a run's input is its metered inbox), and the wrapped
subject data keys (keys, not payload), and schedules (a schedule's input is metered as each
tick's run's inbox). Long-term memory is not a run's: its writes are metered under the run
that wrote them (table ``memory_items``) and its held bytes per tenant (``memory_bytes``,
checked in tests/memory). The assistants made over the API hold a client's config,
context and metadata for a graph, no run's data. The workers' metrics are counts. The same
list, with why, is in docs/checkpoints.md (tests/docs/test_coverage.py checks it)."""

BIG = "B" * 5_000  # above the blob threshold set below
BIG_DIGEST = hashlib.sha256(default_codec.dumps(BIG)).hexdigest()


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    doc: str
    n: int
    side: str
    answer: str


def build(store: Store, steps: int) -> Any:
    def work(s: State) -> dict[str, Any]:
        return {"log": [f"item-{s['n']:05d}"], "n": s["n"] + 1, "doc": BIG}

    def route(s: State) -> Any:
        return "work" if s["n"] < steps else ["peer", "ask"]

    def peer(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        return {"side": ctx.effect("notify", lambda key: f"peer finished {key[:6]}")}

    def ask(s: State) -> dict[str, Any]:
        return {"answer": interrupt({"question": "ship it?"})}

    g = StateGraph(State)
    g.add_node("work", work)
    g.add_node("peer", peer)
    g.add_node("ask", ask)
    g.add_edge(START, "work")
    g.add_conditional_edges("work", route)
    g.add_edge("peer", END)
    g.add_edge("ask", END)
    return g.compile(store, snapshot_every=2, blob_threshold=1_000)


def metered(store: Store, run_id: str) -> dict[str, int]:
    return {t: n for t, n in byte_report(store, "default", run_id).by_table().items() if n}


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_meter_matches_held_bytes_on_every_path(store: Store, durability: str) -> None:
    """In exit mode one commit carries every step (PostgreSQL writes its deltas and its
    meter rows as one statement each)."""
    steps = 2 * FANOUT + 4  # enough snapshots for a segment merge
    app = build(store, steps)
    cfg = {"configurable": {"thread_id": "m1"}}
    Wayline(store).start(app, {"log": [], "n": 0, "doc": ""}, run_id="m1")  # via the inbox
    out = app.invoke(None, cfg, durability=durability)  # applies the inbox, as a worker would
    assert "__interrupt__" in out  # paused mid-step: the peer's pending write is held
    last = store.get_run("default", "m1").step  # type: ignore[union-attr]
    deltas = store.load_deltas("default", "m1", -1, last)
    assert [d.step for d in deltas] == list(range(last + 1)) and last == steps
    held = {t: n for t, n in store.held_bytes("default", "m1").items() if n}
    written = metered(store, "m1")
    # the workload took every write path (LangGraph threads' tables: tests/lg_saver;
    # node-emitted stream events: tests/server/test_stream_events.py; queued input:
    # tests/store/test_input_queue.py)
    assert set(written) == set(METERED_TABLES) - set(LG_TABLES) - {"stream_events", "run_queue"}
    assert written.pop("runs") > 0 and "runs" not in held  # the inbox, applied and cleared
    assert held == written

    app.invoke(Command(resume="yes"), cfg)
    after = store.held_bytes("default", "m1")
    report = metered(store, "m1")
    for table in ("deltas", "snapshots", "segments", "blobs", "effects"):  # never rewritten
        assert after[table] == report[table]
    assert after["pending_writes"] == 0  # the step committed: its peers' writes are in it
    # the answered question stays with its step; the answer rewrote its row (the meter
    # counts each write)
    assert 0 < after["interrupts"] <= report["interrupts"]
    assert app.verify(cfg).ok


def test_every_table_is_metered_or_declared_exempt(store: Store) -> None:
    unknown = set(store.table_names()) - set(METERED_TABLES) - EXEMPT_TABLES
    assert not unknown, f"tables written outside the meter: {unknown}"


def test_blob_is_stored_once_per_tenant_and_purge_keeps_shared_blobs(store: Store) -> None:
    app = build(store, 3)
    for run in ("a", "b"):
        app.invoke({"log": [], "n": 0, "doc": ""}, {"configurable": {"thread_id": run}})
    app.invoke({"log": [], "n": 0, "doc": ""}, {"configurable": {"thread_id": "a", "tenant": "t2"}})
    first, second = metered(store, "a"), metered(store, "b")
    assert first["blobs"] == len(BIG.encode()) + 3  # msgpack str header
    assert "blobs" not in second  # deduplicated: the second run wrote no blob bytes
    assert metered_tenant(store, "t2", "a")["blobs"] == first["blobs"]  # tenants never share

    assert store.purge_run("default", "a") > 0
    assert store.get_run("default", "a") is None
    assert set(store.held_bytes("default", "a").values()) == {0}
    assert store.load_meter("default", "a") == []
    cfg_b = {"configurable": {"thread_id": "b"}}
    assert app.get_state(cfg_b).values["doc"] == BIG  # b's blob survived a's purge
    assert app.invoke(Command(resume="ok"), cfg_b)["answer"] == "ok"
    assert app.verify(cfg_b).ok

    store.purge_run("default", "b")
    assert store.held_bytes("default", "b")["blobs"] == 0
    with pytest.raises(StoreError, match="missing"):
        store.load_blob("default", BIG_DIGEST)
    assert store.load_blob("t2", BIG_DIGEST) == default_codec.dumps(BIG)
    assert metered_tenant(store, "t2", "a")["blobs"] > 0  # the other tenant's copy is intact


def metered_tenant(store: Store, tenant: str, run_id: str) -> dict[str, int]:
    return byte_report(store, tenant, run_id).by_table()


def test_a_snapshot_row_carries_its_meter_and_a_rewrite_keeps_both_writes(store: Store) -> None:
    """A snapshot step writes no meter row: the snapshot's own row carries its breakdown
    and the segments that were new with it. Written again at its step (a migration does),
    it keeps the first write's rows and adds its own; a segment already stored is not
    counted twice; one written without a snapshot at its step gets a meter row."""
    store.create_run("t", "r1", graph_name="g", graph_version="1", durability="sync")
    token = store.claim("t", "r1", owner="w", lease_seconds=30)
    seg = SegmentRecord("seg-1", "log", 0, 0, 1, b"x" * 40, step=1)
    first = SnapshotRecord(1, b"s" * 10, (("log", 6),))
    deltas = [DeltaRecord(0, b"d0"), DeltaRecord(1, b"d1")]
    store.commit("t", "r1", token, CommitBatch(deltas=deltas, snapshots=[first], segments=[seg]))
    assert store.dump_run("t", "r1")["meter"] == []

    def rows() -> list[tuple[int, str, str, int]]:
        meter = store.load_meter("t", "r1")
        return [(m.step, m.table, m.channel, m.bytes) for m in meter if m.table != "deltas"]

    written = [(1, "snapshots", "log", 6), (1, "snapshots", "", 4), (1, "segments", "log", 40)]
    assert rows() == written
    again = SnapshotRecord(1, b"t" * 7)
    store.commit("t", "r1", token, CommitBatch(snapshots=[again], segments=[seg]))
    assert rows() == [*written, (1, "snapshots", "", 7)]
    snapshot = store.load_snapshot("t", "r1", 1)
    assert snapshot is not None and snapshot.payload == b"t" * 7

    alone = SegmentRecord("seg-2", "log", 1, 2, 3, b"y" * 9, step=3)
    store.commit("t", "r1", token, CommitBatch(segments=[alone]))
    assert len(store.dump_run("t", "r1")["meter"]) == 1
    assert rows()[-1] == (3, "segments", "log", 9)
    assert store.held_bytes("t", "r1")["segments"] == 49
