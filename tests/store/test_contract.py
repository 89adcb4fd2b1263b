"""The store contract: every backend passes these (the ``store`` fixture is parametrised
over backends in conftest.py)."""

from __future__ import annotations

import time

import pytest

from wayline.errors import (
    LeaseConflictError,
    LeaseLost,
    RunExistsError,
    RunNotFoundError,
    StoreError,
)
from wayline.store.base import Store
from wayline.store.records import (
    CommitBatch,
    DeltaRecord,
    InterruptRecord,
    PendingWriteRecord,
    RunCreation,
    RunUpdate,
    SnapshotRecord,
)

T = "tenant-a"


def new_run(store: Store, run_id: str = "r1", tenant: str = T) -> int:
    store.create_run(tenant, run_id, graph_name="g", graph_version="1", durability="sync")
    return store.claim(tenant, run_id, owner="w1", lease_seconds=30)


def test_implements_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_create_run_is_idempotent(store: Store) -> None:
    first = store.create_run(T, "r1", graph_name="g", graph_version="1", durability="sync")
    again = store.create_run(T, "r1", graph_name="other", graph_version="9", durability="exit")
    assert first.status == "pending" and first.step == -1
    assert again.graph_name == "g" and again.created_at == first.created_at


def test_a_commit_creates_its_run_with_its_first_batch(store: Store) -> None:
    """A new run's row and its input step in one transaction: born claimed (token 1), so
    the process that starts a run needs no claim of its own and no worker can take it
    first; the batch applied to it; a second creation writes nothing and says the run
    exists."""
    before = time.time()
    new = RunCreation("g", "1", "sync", "me", 30, subject="ann", classes={"n": "pii"})
    step = CommitBatch(deltas=[DeltaRecord(0, b"x")], run=RunUpdate("running", 0, ("a",)))
    step.create = new
    store.commit(T, "r1", 1, step)
    run = store.get_run(T, "r1")
    assert run is not None
    assert run.lease_expires_at is not None and run.lease_expires_at >= before + 30
    assert store.claim_next(owner="w", lease_seconds=30, graphs=[("g", "1", "")]) is None
    assert (run.status, run.step, run.next_nodes) == ("running", 0, ("a",))
    assert (run.lease_owner, run.fencing_token, run.incarnation) == ("me", 1, new.incarnation)
    assert (run.subject, dict(run.classes)) == ("ann", {"n": "pii"})
    assert (run.attempts, run.wake_at, run.cancel_requested, run.inbox) == (0, None, False, None)
    assert [d.step for d in store.load_deltas(T, "r1", -1, 0)] == [0]
    with pytest.raises(LeaseConflictError):
        store.claim(T, "r1", owner="w", lease_seconds=30)
    other = RunCreation("g", "1", "sync", "other", 30)
    again = CommitBatch(deltas=[DeltaRecord(0, b"y")], run=RunUpdate("done", 0, ()))
    again.create = other
    with pytest.raises(RunExistsError):
        store.commit(T, "r1", 1, again)
    after = store.get_run(T, "r1")
    assert after is not None and (after.status, after.lease_owner) == ("running", "me")
    assert [d.payload for d in store.load_deltas(T, "r1", -1, 0)] == [b"x"]
    done = CommitBatch(deltas=[DeltaRecord(0, b"z")], run=RunUpdate("done", 0, (), None, "d"))
    done.create = RunCreation("g", "1", "exit", "me", 30)
    store.commit(T, "r2", 1, done)  # a run that finishes in its first step holds no lease
    settled = store.get_run(T, "r2")
    assert settled is not None and (settled.status, settled.state_digest) == ("done", "d")
    assert (settled.lease_owner, settled.lease_expires_at, settled.fencing_token) == (None, None, 1)
    assert (settled.durability, settled.subject, dict(settled.classes)) == ("exit", None, {})


def test_a_group_commit_creates_runs_and_refuses_an_existing_one_alone(store: Store) -> None:
    new_run(store, "old")

    def first(payload: bytes, owner: str) -> CommitBatch:
        batch = CommitBatch(deltas=[DeltaRecord(0, payload)], run=RunUpdate("running", 0, ()))
        batch.create = RunCreation("g", "1", "sync", owner, 30)
        return batch

    errors = store.commit_many([(T, "new", 1, first(b"n", "a")), (T, "old", 1, first(b"o", "b"))])
    assert errors[0] is None and isinstance(errors[1], RunExistsError)
    created, old = store.get_run(T, "new"), store.get_run(T, "old")
    assert created is not None and (created.lease_owner, created.step) == ("a", 0)
    assert old is not None and (old.lease_owner, old.step) == ("w1", -1)
    assert store.load_deltas(T, "old", -1, 0) == []


def test_runs_are_isolated_by_tenant(store: Store) -> None:
    new_run(store, "shared-id", tenant="t1")
    assert store.get_run("t2", "shared-id") is None
    assert store.list_runs("t2") == []
    assert [r.run_id for r in store.list_runs("t1")] == ["shared-id"]
    with pytest.raises(RunNotFoundError):
        store.claim("t2", "shared-id", owner="w", lease_seconds=1)


def test_claim_increments_token_and_refuses_live_lease(store: Store) -> None:
    t1 = new_run(store)
    with pytest.raises(LeaseConflictError):
        store.claim(T, "r1", owner="w2", lease_seconds=30)
    assert store.claim(T, "r1", owner="w1", lease_seconds=30) == t1 + 1  # same owner re-claims
    t3 = store.claim(T, "r1", owner="w2", lease_seconds=30, steal=True)
    assert t3 == t1 + 2
    run = store.get_run(T, "r1")
    assert run is not None and run.lease_owner == "w2" and run.fencing_token == t3


def test_expired_lease_is_claimable_at_once(store: Store) -> None:
    store.create_run(T, "r1", graph_name="g", graph_version="1", durability="sync")
    t1 = store.claim(T, "r1", owner="dead", lease_seconds=-1)
    assert store.claim(T, "r1", owner="alive", lease_seconds=30) == t1 + 1


def test_stale_token_writes_nothing(store: Store) -> None:
    old = new_run(store)
    store.claim(T, "r1", owner="w2", lease_seconds=30, steal=True)
    batch = CommitBatch(
        deltas=[DeltaRecord(0, b"x")],
        run=RunUpdate("running", 0, ("a",)),
    )
    with pytest.raises(LeaseLost):
        store.commit(T, "r1", old, batch)
    assert store.load_deltas(T, "r1", -1, 10) == []
    run = store.get_run(T, "r1")
    assert run is not None and run.step == -1 and run.status == "pending"


def test_commit_applies_every_part_in_one_transaction(store: Store) -> None:
    token = new_run(store)
    store.commit(
        T,
        "r1",
        token,
        CommitBatch(
            pending=[PendingWriteRecord(1, "task-a", b"pa")],
            interrupts=[InterruptRecord(1, "task-b", 0, "i0", b"q")],
        ),
    )
    assert [p.task_id for p in store.load_pending(T, "r1", 1)] == ["task-a"]
    store.commit(
        T,
        "r1",
        token,
        CommitBatch(
            deltas=[DeltaRecord(0, b"d0"), DeltaRecord(1, b"d1")],
            snapshots=[SnapshotRecord(1, b"s1")],
            clear_pending_through=1,
            run=RunUpdate("done", 1, (), state_digest="abc"),
        ),
    )
    assert [(d.step, d.payload) for d in store.load_deltas(T, "r1", -1, 5)] == [
        (0, b"d0"),
        (1, b"d1"),
    ]
    assert store.load_pending(T, "r1", 1) == []
    # the question stays with the step that asked it (a past checkpoint shows it)
    assert [i.interrupt_id for i in store.load_interrupts(T, "r1", 1)] == ["i0"]
    run = store.get_run(T, "r1")
    assert run is not None
    assert (run.status, run.step, run.next_nodes, run.state_digest) == ("done", 1, (), "abc")


def test_failed_commit_leaves_nothing_behind(store: Store) -> None:
    token = new_run(store)
    store.commit(T, "r1", token, CommitBatch(deltas=[DeltaRecord(0, b"d0")]))
    duplicate = CommitBatch(
        deltas=[DeltaRecord(1, b"d1"), DeltaRecord(0, b"again")],
        run=RunUpdate("running", 1, ("x",)),
    )
    with pytest.raises(StoreError):
        store.commit(T, "r1", token, duplicate)
    assert [d.payload for d in store.load_deltas(T, "r1", -1, 5)] == [b"d0"]
    run = store.get_run(T, "r1")
    assert run is not None and run.step == -1


def test_delta_ranges_and_nearest_snapshot(store: Store) -> None:
    token = new_run(store)
    store.commit(
        T,
        "r1",
        token,
        CommitBatch(
            deltas=[DeltaRecord(i, bytes([i])) for i in range(10)],
            snapshots=[SnapshotRecord(3, b"s3"), SnapshotRecord(6, b"s6")],
        ),
    )
    assert [d.step for d in store.load_deltas(T, "r1", 6, 8)] == [7, 8]
    snap = store.load_snapshot(T, "r1", 5)
    assert snap is not None and (snap.step, snap.payload) == (3, b"s3")
    assert store.load_snapshot(T, "r1", 2) is None
    latest = store.load_snapshot(T, "r1", 100)
    assert latest is not None and latest.step == 6


def test_interrupt_answer_overwrites_question_row(store: Store) -> None:
    token = new_run(store)
    asked = InterruptRecord(2, "task", 0, "i0", b"q")
    store.commit(T, "r1", token, CommitBatch(interrupts=[asked]))
    answered = InterruptRecord(2, "task", 0, "i0", b"q", resume=b"yes")
    store.commit(T, "r1", token, CommitBatch(interrupts=[answered]))
    assert store.load_interrupts(T, "r1", 2) == [answered]


def test_release_clears_lease_only_for_current_token(store: Store) -> None:
    token = new_run(store)
    store.release(T, "r1", token - 1)
    run = store.get_run(T, "r1")
    assert run is not None and run.lease_owner == "w1"
    store.release(T, "r1", token)
    run = store.get_run(T, "r1")
    assert run is not None and run.lease_owner is None
    assert store.claim(T, "r1", owner="w2", lease_seconds=30) == token + 1


def test_list_runs_filters_by_status(store: Store) -> None:
    token = new_run(store, "a")
    new_run(store, "b")
    store.commit(T, "a", token, CommitBatch(run=RunUpdate("done", 3, ())))
    assert [r.run_id for r in store.list_runs(T, status="done")] == ["a"]
    assert {r.run_id for r in store.list_runs(T)} == {"a", "b"}


def test_next_expiry_is_the_first_lease_to_run_out(store: Store) -> None:
    graphs = [("g", "1", "")]
    assert store.next_expiry(graphs=graphs) is None
    new_run(store, "a")  # leased for 30 s by new_run
    store.create_run(T, "b", graph_name="g", graph_version="1", durability="sync")
    store.claim(T, "b", owner="w2", lease_seconds=5)
    soonest = store.next_expiry(graphs=graphs)
    assert soonest is not None and 0 < soonest - time.time() <= 5
    assert store.next_expiry(graphs=[("other", "1", "")]) is None
    assert store.next_expiry(graphs=graphs, tenant_id="someone-else") is None


def test_each_step_keeps_when_it_was_committed(store: Store) -> None:
    """``step_times``: every insert path (one delta, several in one commit, a run's first
    commit) records the commit's time, so a past checkpoint has its own ``created_at``."""
    token = new_run(store)
    before = time.time()
    store.commit(T, "r1", token, CommitBatch(deltas=[DeltaRecord(0, b"a")]))
    many = CommitBatch(deltas=[DeltaRecord(1, b"b"), DeltaRecord(2, b"c")])
    store.commit(T, "r1", token, many)
    step = CommitBatch(deltas=[DeltaRecord(0, b"x")], run=RunUpdate("running", 0, ("a",)))
    step.create = RunCreation("g", "1", "sync", "me", 30)
    store.commit(T, "r2", 1, step)
    after = time.time()
    times = store.step_times(T, "r1", -1, 5)
    assert sorted(times) == [0, 1, 2]
    assert all(before - 1 <= t <= after + 1 for t in times.values())  # clocks: same host
    assert times[0] <= times[1] == times[2]  # one commit, one time
    assert list(store.step_times(T, "r1", 0, 1)) == [1]
    assert list(store.step_times(T, "r2", -1, 0)) == [0]
    assert store.step_times(T, "none", -1, 5) == {}
