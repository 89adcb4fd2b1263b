"""Rolling a stopped run back (``RollbackContract``), on every backend: the steps after the
point go with their snapshots, segments, questions and stream events; the effect ledger
and the meter stay; the row moves back under the new incarnation and the audit log says
who removed which steps. A run a worker holds, or one asked to go forward, is refused."""

from __future__ import annotations

import json

import pytest

from wayline.errors import StoreError
from wayline.ids import incarnation_at, rolled_back
from wayline.store.base import Store
from wayline.store.records import (
    CommitBatch,
    DeltaRecord,
    EffectRecord,
    InterruptRecord,
    RunUpdate,
    SnapshotRecord,
)

T = "tenant-a"


def _steps(store: Store, last: int, *, stop: bool = True) -> int:
    store.create_run(T, "r1", graph_name="g", graph_version="1", durability="sync")
    token = store.claim(T, "r1", owner="w1", lease_seconds=30)
    for step in range(last + 1):
        batch = CommitBatch(
            deltas=[DeltaRecord(step, f"d{step}".encode())],
            run=RunUpdate("running" if step < last or not stop else "done", step, ()),
        )
        if step in (1, 4):
            batch.snapshots.append(SnapshotRecord(step, f"s{step}".encode()))
        store.commit(T, "r1", token, batch)
    effect = EffectRecord(T, "wl-k4", "r1", "effect", "charge", 4, "charge", 0, 1, "dg",
                          "SUCCEEDED", token, result=b"ch_1")  # fmt: skip
    assert store.put_effect("r1", token, effect, expect=None)
    return token


def test_roll_back_removes_the_later_steps_and_keeps_the_ledger(store: Store) -> None:
    token = _steps(store, 5, stop=False)
    with pytest.raises(StoreError):  # running, held: its worker may still write
        store.roll_back(T, "r1", after_step=2, incarnation="x", actor="alice")
    store.commit(T, "r1", token, CommitBatch(run=RunUpdate("cancelled", 5, ())))
    store.release(T, "r1", token)
    run = store.get_run(T, "r1")
    assert run is not None
    new = rolled_back(run.incarnation, 2, "n1")
    removed = store.roll_back(T, "r1", after_step=2, incarnation=new, actor="alice")
    assert removed == 3
    after = store.get_run(T, "r1")
    assert after is not None
    assert (after.step, after.status, after.incarnation) == (2, "done", new)
    assert [d.step for d in store.load_deltas(T, "r1", -1, 10)] == [0, 1, 2]
    snapshot = store.load_snapshot(T, "r1", 10)
    assert snapshot is not None and snapshot.step == 1
    assert store.get_effect(T, "wl-k4") is not None  # what step 4 dispatched happened
    (entry,) = [a for a in store.load_audit(T, "r1") if a.action == "rollback"]
    assert entry.actor == "alice"
    assert json.loads(entry.detail or "{}")["steps_removed"] == [3, 5]
    with pytest.raises(StoreError):  # only ever back
        store.roll_back(T, "r1", after_step=4, incarnation="y", actor="alice")


def test_a_question_asked_before_the_point_is_open_again(store: Store) -> None:
    """Answered after step 1 (by the run removed: a resume), asked before: open again."""
    token = _steps(store, 4)
    asked = InterruptRecord(2, "task", 0, "i-2", b"q", resume=b"yes")  # asked after step 1
    later = InterruptRecord(4, "task", 0, "i-4", b"q")
    store.commit(T, "r1", token, CommitBatch(interrupts=[asked, later]))
    store.release(T, "r1", token)
    assert [i.resume for i in store.load_interrupts(T, "r1", 2)] == [b"yes"]
    store.roll_back(T, "r1", after_step=1, incarnation="x", actor="alice")
    run = store.get_run(T, "r1")
    assert run is not None and run.status == "interrupted" and run.step == 1
    (again,) = store.load_interrupts(T, "r1", 2)
    assert again.interrupt_id == "i-2" and again.resume is None
    assert store.load_interrupts(T, "r1", 4) == []


def test_incarnations_after_rollbacks_keep_the_keys_of_the_steps_before() -> None:
    """A step derives from the incarnation it ran under: the keys of a step no rollback
    removed never change, a step each rollback removed gets new ones every time."""
    base = "abc"
    once = rolled_back(base, 3, "n1")  # steps 4.. removed, run again
    twice = rolled_back(once, 1, "n2")  # then steps 2.. removed, run again
    assert incarnation_at(base, 9) == base
    assert incarnation_at(once, 3) == base and incarnation_at(once, 4) == once
    assert incarnation_at(twice, 1) == base  # never removed: its first keys
    assert incarnation_at(twice, 2) == twice  # removed by the second: new keys
    assert incarnation_at(twice, 5) == twice  # removed by both: new keys again
    assert len({base, once, twice}) == 3
