"""Damage every table that stores run data (flip a byte, truncate, delete the row) and check
what an operator relies on: the damage is detected on read, a resume is refused, nothing is
rewritten, and once the row is restored the run continues to exactly the state of an
undamaged run, its effect performed once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_graph import RESUME, START_INPUT, build, cfg, everything, reference
from fault_rows import delete_row as delete
from fault_rows import flip_row as flip
from fault_rows import pick, rows_of, sql
from fault_rows import restore_row as restore
from fault_rows import truncate_row as truncate

import wayline
from wayline.client import Wayline
from wayline.control.integrity import check_run
from wayline.effects.retry import RetryPolicy
from wayline.errors import CorruptionError, ResumeError
from wayline.store.base import Store
from wayline.worker import Worker, WorkerConfig

Fault = Callable[[Store, str, dict[str, Any]], None]
FAULTS: dict[str, Fault] = {"flip": flip, "truncate": truncate, "delete": delete}

DETECTED = [
    (table, fault)
    for table in ("deltas", "snapshots", "segments", "pending_writes", "interrupts", "blobs")
    for fault in ("flip", "truncate")
] + [
    ("effects", "flip"),
    ("effects", "truncate"),
    ("deltas", "delete"),
    ("segments", "delete"),
    ("blobs", "delete"),
]
"""Damage a read of the waiting run must report (effects are read when the task re-runs)."""

HARMLESS = [("snapshots", "delete"), ("pending_writes", "delete")]
"""Damage that loses nothing: the state is rebuilt from earlier rows, a finished peer runs
again (it made no effect)."""


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = (
        f"sqlite:///{tmp_path / 'faults.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    s = wayline.connect(url)
    yield s
    s.close()


def waiting_run(store: Store, charges: Counter[str]) -> Any:
    app = build(store, charges)
    out = app.invoke(START_INPUT, cfg())
    assert "__interrupt__" in out and sum(charges.values()) == 1
    return app


@pytest.mark.parametrize(("table", "fault"), DETECTED)
def test_damage_is_detected_refused_and_recoverable(store: Store, table: str, fault: str) -> None:
    charges: Counter[str] = Counter()
    app = waiting_run(store, charges)
    row = pick(store, table, "f-1")
    FAULTS[fault](store, table, row)
    damaged = everything(store, "f-1")

    report = check_run(store, "default", "f-1")
    assert not report.ok and report.problems, f"{table} {fault} not reported"
    if table != "effects":  # get_state does not read the effect ledger
        with pytest.raises(CorruptionError):
            app.get_state(cfg())
    with pytest.raises(CorruptionError) as refused:
        app.invoke(RESUME, cfg())
    assert refused.value.table == table
    after = everything(store, "f-1")
    if table == "effects":  # found when the answered task re-ran: the answer is kept
        assert [i[7] for i in after.pop("interrupts")] == [app.codec.dumps("yes")]
        damaged.pop("interrupts")
    assert after == damaged  # nothing rewritten, step and status kept
    run = store.get_run("default", "f-1")
    assert run is not None and run.status == "interrupted" and run.step == 4
    assert run.error is not None and "corrupt" in run.error  # the reason, beside the run

    restore(store, table, row)
    assert check_run(store, "default", "f-1").ok
    final = app.invoke(None if table == "effects" else RESUME, cfg())
    assert final == reference(store)
    assert list(charges.values()) == [1]  # the effect of the damaged run ran once


@pytest.mark.parametrize(("table", "fault"), HARMLESS)
def test_damage_that_loses_nothing(store: Store, table: str, fault: str) -> None:
    charges: Counter[str] = Counter()
    app = waiting_run(store, charges)
    FAULTS[fault](store, table, pick(store, table, "f-1"))
    assert app.invoke(RESUME, cfg()) == reference(store)
    assert list(charges.values()) == [1]


@pytest.mark.parametrize("table", ["deltas", "snapshots"])
def test_unreadable_byte_counts_are_reported_and_lose_nothing(store: Store, table: str) -> None:
    """A row's byte counts (its ``sizes``) damaged: the instrument names the row, and the
    run, whose state never reads them, resumes as if nothing happened."""
    charges: Counter[str] = Counter()
    app = waiting_run(store, charges)
    row = pick(store, table, "f-1")
    assert row["sizes"] is not None
    damage = f"UPDATE {table} SET sizes = ? WHERE tenant_id = 'default' AND run_id = ? AND step = ?"
    sql(store, damage, ('[["log",', "f-1", row["step"]))
    with pytest.raises(CorruptionError) as unreadable:
        store.load_meter("default", "f-1")
    assert (unreadable.value.table, unreadable.value.step) == (table, row["step"])
    cli = [sys.executable, "-m", "wayline.cli.main", "runs", "bytes", "f-1"]
    env = {**os.environ, "COLUMNS": "300"}
    shown = subprocess.run(
        [*cli, "--db", store.url],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert shown.returncode == 1 and "Traceback" not in shown.stderr, shown.stderr
    assert f"{table} row of run 'f-1' at step {row['step']}" in shown.stdout + shown.stderr
    assert app.invoke(RESUME, cfg()) == reference(store)
    assert list(charges.values()) == [1]


def test_a_deleted_question_is_refused_then_answered_once_restored(store: Store) -> None:
    charges: Counter[str] = Counter()
    app = waiting_run(store, charges)
    row = pick(store, "interrupts", "f-1")
    delete(store, "interrupts", row)
    with pytest.raises(ResumeError, match="no pending interrupt"):
        app.invoke(RESUME, cfg())
    restore(store, "interrupts", row)
    assert app.invoke(RESUME, cfg()) == reference(store)
    assert list(charges.values()) == [1]


@pytest.mark.parametrize("fault", ["flip", "truncate"])
def test_a_damaged_queued_input_leaves_the_run_failed_until_restored(
    store: Store, fault: str
) -> None:
    app = build(store)
    Wayline(store).start(app, START_INPUT, run_id="q-1")
    (row,) = rows_of(store, "runs", "q-1")
    FAULTS[fault](store, "runs", row)
    worker = Worker(store, app, WorkerConfig(retry=RetryPolicy(max_attempts=1)))
    with pytest.raises(CorruptionError, match="runs row of run 'q-1'"):
        store.claim_next(
            owner="w", lease_seconds=30, graphs=[(app.name, app.version, app.fingerprint)]
        )
    (after,) = rows_of(store, "runs", "q-1")
    assert after["status"] == "failed" and after["step"] == -1 and after["lease_owner"] is None
    assert "corrupt" in after["error"]
    assert (
        store.claim_next(
            owner="w", lease_seconds=30, graphs=[(app.name, app.version, app.fingerprint)]
        )
        is None
    )

    restore(store, "runs", row)  # the row as it was: pending, with its input
    worker.run(max_runs=1)
    assert app.get_state(cfg("q-1")).interrupts  # it ran to its question
    assert app.invoke(RESUME, cfg("q-1")) == reference(store)


def test_a_run_row_whose_next_nodes_cannot_be_read_is_failed_at_its_claim(store: Store) -> None:
    """Unlike payloads, a run row's JSON columns carry no checksum: damaged, the claim reports
    the row and fails the run (not taken again at every lease expiry); restored and
    requeued, it runs to the same state as an undamaged run."""
    app = build(store)
    Wayline(store).start(app, START_INPUT, run_id="q-2")
    damage = "UPDATE runs SET next_nodes = ? WHERE tenant_id = 'default' AND run_id = ?"
    sql(store, damage, ("[", "q-2"))
    graphs = [(app.name, app.version, app.fingerprint)]
    with pytest.raises(CorruptionError, match="runs row of run 'q-2'"):
        store.claim_next(owner="w", lease_seconds=30, graphs=graphs)
    with pytest.raises(CorruptionError, match="runs row of run 'q-2'"):
        store.get_run("default", "q-2")
    (after,) = rows_of(store, "runs", "q-2")
    assert after["status"] == "failed" and after["lease_owner"] is None
    assert "corrupt" in after["error"]
    assert store.claim_next(owner="w", lease_seconds=30, graphs=graphs) is None

    sql(store, damage, ("[]", "q-2"))
    assert store.requeue("default", "q-2")
    Worker(store, app, WorkerConfig(retry=RetryPolicy(max_attempts=1))).run(max_runs=1)
    assert app.get_state(cfg("q-2")).interrupts  # it ran to its question
    assert app.invoke(RESUME, cfg("q-2")) == reference(store)


def test_a_run_whose_row_cannot_be_read_is_listed_with_why_and_hides_no_other(
    store: Store,
) -> None:
    app = build(store)
    for run_id in ("ok-2", "bad-2"):
        Wayline(store).start(app, START_INPUT, run_id=run_id)
    (row,) = rows_of(store, "runs", "bad-2")
    flip(store, "runs", row)  # its queued input
    listed = {r.run_id: r for r in store.list_runs("default")}
    assert listed["ok-2"].error is None and listed["ok-2"].inbox is not None
    bad = listed["bad-2"]
    assert bad.inbox is None and bad.error is not None and "runs row of run 'bad-2'" in bad.error
    with pytest.raises(CorruptionError):
        store.get_run("default", "bad-2")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "wayline.cli.main", "runs", *args, "--db", store.url]
        env = {**os.environ, "COLUMNS": "300"}
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)

    shown = cli("list")
    assert shown.returncode == 0 and "ok-2" in shown.stdout and "bad-2" in shown.stdout
    assert "is corrupt" in shown.stdout
    one = cli("show", "bad-2")  # one line naming the row, not a traceback
    assert one.returncode == 1 and "Traceback" not in one.stdout + one.stderr
    assert "runs row of run 'bad-2'" in one.stdout


def test_runs_verify_lists_damage_of_an_unfinished_run_without_the_graph(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'verify.db'}"
    store = wayline.connect(url)
    waiting_run(store, Counter())
    cli = [sys.executable, "-m", "wayline.cli.main", "runs", "verify", "f-1", "--db", url]

    def verify() -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COLUMNS": "300"}
        return subprocess.run(cli, capture_output=True, text=True, timeout=120, env=env)

    assert verify().returncode == 0
    delta, segment = pick(store, "deltas", "f-1"), pick(store, "segments", "f-1")
    truncate(store, "deltas", delta)  # a damaged header: no traceback, a named row
    delete(store, "segments", segment)  # and every problem is listed, not only the first
    damaged = verify()
    assert damaged.returncode == 1, damaged.stdout + damaged.stderr
    assert "Traceback" not in damaged.stdout + damaged.stderr
    assert "deltas row of run 'f-1' at step 4" in damaged.stdout
    assert "segments row of run 'f-1'" in damaged.stdout and "2 problem(s)" in damaged.stdout
    restore(store, "deltas", delta)
    restore(store, "segments", segment)
    assert verify().returncode == 0
    store.close()
