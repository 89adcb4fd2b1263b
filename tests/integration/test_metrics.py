"""The fleet's metrics by counts (``wayline.metrics``): every commit timed, grouped ones
included; what a worker flushes to the store is what it recorded; scheduled verification
finds a divergence planted in a finished run. Each test uses a tenant of its own: the
registry is the process's, so counts are read for that tenant only."""

from __future__ import annotations

import operator
import sqlite3
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.client import Wayline
from wayline.metrics import REGISTRY
from wayline.store.metric_samples import metric_samples
from wayline.store.records import CommitBatch, DeltaRecord
from wayline.worker import Worker, WorkerConfig
from wayline.worker.verifier import Verifier

STEPS = 5


class Count(TypedDict, total=False):
    log: Annotated[list[int], operator.add]
    n: int


def _step(s: Count) -> dict[str, Any]:
    return {"log": [s["n"]], "n": s["n"] + 1}


def counting(url: str) -> Any:
    g = StateGraph(Count, name="metered")
    g.add_node("step", _step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < STEPS else END)
    return g.compile(url)


def commits(tenant: str, **match: str) -> int:
    return sum(
        s.count for k, s in REGISTRY.matching("wayline.commit.duration", **match) if k[1] == tenant
    )


def queued(tmp_path: Path, runs: int, concurrency: int) -> tuple[str, Wayline, Worker]:
    """``runs`` runs started under a tenant of their own, and a worker for them."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    tenant = f"m-{uuid.uuid4().hex[:6]}"
    app = counting(url)
    client = Wayline(url, tenant=tenant)
    for i in range(runs):
        client.start(app, {"log": [], "n": 0}, run_id=f"r{i}")
    return (
        tenant,
        client,
        Worker(url, app, WorkerConfig(concurrency=concurrency, poll_interval=0.02)),
    )


def test_every_commit_of_a_worker_is_timed_grouped_ones_included(tmp_path: Path) -> None:
    runs = 12
    tenant, client, worker = queued(tmp_path, runs, concurrency=4)
    worker.run(max_runs=runs)
    stats = worker.group.stats
    assert all(client.get(f"r{i}").status == "done" for i in range(runs))
    assert stats.commits >= runs * (STEPS + 1)  # each step of each run, at least
    assert commits(tenant) == stats.commits  # every one timed, whatever its group
    assert (commits(tenant, grouped="true") > 0) == (stats.largest > 1)

    # what the worker flushes is what it recorded; a finished run's steps come with it
    assert worker.metrics is not None
    worker.metrics.flush()
    rows = metric_samples(worker.store).load(tenant, 0)
    flushed = {
        name: sum(r.count for r in rows if r.metric == name)
        for name in ("wayline.commit.duration", "wayline.run.steps", "wayline.step.bytes")
    }
    assert flushed["wayline.commit.duration"] == stats.commits
    assert flushed["wayline.run.steps"] == runs
    steps = [r for r in rows if r.metric == "wayline.run.steps"]
    assert sum(r.total for r in steps) == runs * (STEPS + 1)  # the input step and five
    deltas = [
        r for r in rows if r.metric == "wayline.step.bytes" and ("table", "deltas") in r.attrs
    ]
    for cls in ("default", "framing"):  # a value a step for each class it wrote
        assert sum(r.count for r in deltas if ("class", cls) in r.attrs) == runs * (STEPS + 1)
    metered = sum(
        m.bytes
        for i in range(runs)
        for m in worker.store.load_meter(tenant, f"r{i}")
        if m.table == "deltas"
    )
    assert sum(r.total for r in deltas) == metered  # the meter's own bytes, per step


def test_a_finished_run_costs_the_worker_no_read_of_its_row(tmp_path: Path) -> None:
    """The claim returns the row and the last commit says ``done``: neither the slot nor the
    metrics flush reads the run again to learn its status or its step count."""
    runs = 6
    tenant, client, worker = queued(tmp_path, runs, concurrency=2)
    reads: list[str] = []
    get_run = worker.store.get_run

    def counted(tenant_id: str, run_id: str) -> Any:
        reads.append(run_id)
        return get_run(tenant_id, run_id)

    worker.store.get_run = counted  # type: ignore[method-assign]
    worker.run(max_runs=runs)
    assert worker.metrics is not None
    worker.metrics.flush()
    assert all(client.get(f"r{i}").status == "done" for i in range(runs))
    assert reads == []
    rows = metric_samples(worker.store).load(tenant, 0)
    steps = [r for r in rows if r.metric == "wayline.run.steps"]
    assert sum(r.count for r in steps) == runs
    assert sum(r.total for r in steps) == runs * (STEPS + 1)
    ratios = [r for r in rows if r.metric == "wayline.run.first_to_last"]
    assert sum(r.count for r in ratios) == runs  # the meter read, off the slots


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_group_commit_times_each_run_it_carries(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """One transaction for three runs (PostgreSQL: one statement): three values, grouped."""
    url = (
        f"sqlite:///{tmp_path / 'g.db'}"
        if backend == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    store = wayline.connect(url)
    tenant = f"g-{uuid.uuid4().hex[:6]}"
    items = []
    for i in range(3):
        store.create_run(tenant, f"r{i}", graph_name="g", graph_version="1", durability="sync")
        token = store.claim(tenant, f"r{i}", owner="w", lease_seconds=30)
        items.append((tenant, f"r{i}", token, CommitBatch(deltas=[DeltaRecord(0, b"step")])))
    assert store.commit_many(items) == [None, None, None]
    assert commits(tenant, grouped="true") == 3 and commits(tenant, grouped="false") == 0
    store.close()


def test_scheduled_verification_finds_a_divergence_planted_in_a_finished_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v.db"
    url = f"sqlite:///{path}"
    tenant = f"v-{uuid.uuid4().hex[:6]}"
    app = counting(url)
    for run_id in ("good", "tampered", "damaged"):
        app.invoke({"log": [], "n": 0}, {"configurable": {"thread_id": run_id, "tenant": tenant}})
    db = sqlite3.connect(path)
    with db:  # the committed digest no longer matches the rows; a delta's bytes changed
        db.execute(
            "UPDATE runs SET state_digest = ? WHERE tenant_id = ? AND run_id = 'tampered'",
            ("0" * 64, tenant),
        )
        where = "WHERE tenant_id = ? AND run_id = 'damaged' AND step = 2"
        (payload,) = db.execute(f"SELECT payload FROM deltas {where}", (tenant,)).fetchone()
        flipped = bytes([payload[0] ^ 0xFF]) + payload[1:]
        db.execute(f"UPDATE deltas SET payload = ? {where}", (flipped, tenant))
    db.close()
    store = wayline.connect(url)
    verifier = Verifier(store, {(app.name, app.version): app}, actor="verifier-test", tenant=tenant)
    outcomes = {verifier.verify_next() for _ in range(3)}
    assert outcomes == {"ok", "diverged", "corrupt"}
    by_outcome = {
        dict(k[2])["outcome"]: s.count
        for k, s in REGISTRY.matching("wayline.verify.runs")
        if k[1] == tenant
    }
    assert by_outcome == {"ok": 1, "diverged": 1, "corrupt": 1}
    audit = [(a.action, a.outcome) for a in store.load_audit(tenant, "tampered")]
    assert audit == [("verify", "diverged")]
    assert [a.outcome for a in store.load_audit(tenant, "damaged")] == ["corrupt"]
    assert store.load_audit(tenant, "good") == []
    for _ in range(3):  # in turn, around again: found again, audited once
        verifier.verify_next()
    assert len(store.load_audit(tenant, "tampered")) == 1
    assert verifier.verified == 6
    assert store.get_run(tenant, "tampered").status == "done"  # type: ignore[union-attr]
