"""What wakes a waiting run, at the store: a suspension's wake time is committed with it,
the claim query takes the run once it is due and not before, and an idle worker's wait
ends at the first wake time (``next_expiry``)."""

from __future__ import annotations

import time

import pytest

from wayline.errors import LeaseLost
from wayline.store.base import Store
from wayline.store.records import CommitBatch, RunStatus, RunUpdate, Wake

T = "tenant-w"
G = ("g", "1", "")


def _suspended(store: Store, run_id: str, status: RunStatus, wake: float | None) -> None:
    """A run that a worker suspended (``status``) with this wake time, lease given up."""
    store.enqueue(T, run_id, b"in", graph_name=G[0], graph_version=G[1], durability="sync")
    claimed = store.claim_next(owner="w", lease_seconds=30, graphs=[G], tenant_id=T)
    assert claimed is not None and claimed[0].run_id == run_id
    token = claimed[1]
    batch = CommitBatch(run=RunUpdate(status, 0, ("n",)), take_inbox=True, wake=Wake(wake))
    store.commit(T, run_id, token, batch)
    store.release(T, run_id, token)


def _wait_past(at: float) -> None:
    deadline = time.monotonic() + 10
    while time.time() <= at:
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.parametrize("status", ["pending", "interrupted"])
def test_a_suspended_run_is_claimed_once_when_due_and_not_before(
    store: Store, status: RunStatus
) -> None:
    wake = time.time() + 0.3
    _suspended(store, "r1", status, wake)
    run = store.get_run(T, "r1")
    assert run is not None and run.status == status and run.wake_at == pytest.approx(wake)
    assert store.claim_next(owner="a", lease_seconds=30, graphs=[G]) is None
    assert store.next_expiry(graphs=[G]) == pytest.approx(wake)  # an idle worker's wait
    _wait_past(wake)
    claimed = store.claim_next(owner="a", lease_seconds=30, graphs=[G])
    assert claimed is not None and claimed[0].run_id == "r1"
    assert claimed[0].wake_at is None  # the claim spends it: no second worker wakes it
    assert store.claim_next(owner="b", lease_seconds=30, graphs=[G]) is None


def test_an_interrupted_run_without_a_wake_time_is_never_claimed(store: Store) -> None:
    _suspended(store, "asked", "interrupted", None)
    assert store.claim_next(owner="a", lease_seconds=30, graphs=[G]) is None
    assert store.next_expiry(graphs=[G]) is None


def test_sleepers_do_not_hide_queued_work_and_wake_in_their_order(store: Store) -> None:
    now = time.time()
    _suspended(store, "late", "pending", now + 0.4)
    _suspended(store, "soon", "pending", now + 0.2)
    store.enqueue(T, "fresh", b"in", graph_name=G[0], graph_version=G[1], durability="sync")
    first = store.claim_next(owner="a", lease_seconds=30, graphs=[G])
    assert first is not None and first[0].run_id == "fresh"
    assert store.claim_next(owner="a", lease_seconds=30, graphs=[G]) is None
    assert store.next_expiry(graphs=[G], tenant_id=T) == pytest.approx(now + 0.2)
    _wait_past(now + 0.4)
    order = []
    while (claimed := store.claim_next(owner="a", lease_seconds=30, graphs=[G])) is not None:
        order.append(claimed[0].run_id)
    assert order == ["soon", "late"]


def test_the_wake_time_is_fenced_with_its_commit(store: Store) -> None:
    store.enqueue(T, "r", b"in", graph_name=G[0], graph_version=G[1], durability="sync")
    claimed = store.claim_next(owner="a", lease_seconds=30, graphs=[G])
    assert claimed is not None
    stale = claimed[1]
    store.claim(T, "r", owner="b", lease_seconds=30, steal=True)
    batch = CommitBatch(run=RunUpdate("pending", 0, ("n",)), wake=Wake(time.time() + 60))
    with pytest.raises(LeaseLost):
        store.commit(T, "r", stale, batch)
    run = store.get_run(T, "r")
    assert run is not None and run.wake_at is None and run.status == "running"


def test_new_input_replaces_the_wait(store: Store) -> None:
    _suspended(store, "r", "pending", time.time() + 3600)
    store.enqueue(T, "r", b"again", graph_name=G[0], graph_version=G[1], durability="sync")
    claimed = store.claim_next(owner="a", lease_seconds=30, graphs=[G])
    assert claimed is not None and claimed[0].run_id == "r" and claimed[0].inbox == b"again"
