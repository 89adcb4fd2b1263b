"""Takeover does not wait behind the queue: a run whose lease expired (its worker died) is
claimed before queued work, however much of it there is and however recently the dead
worker committed."""

from __future__ import annotations

from wayline.store.base import Store

T = "tenant-a"
QUEUED = ("g", "queued", "")
ABANDONED = ("g", "abandoned", "")


def test_a_run_whose_lease_expired_is_claimed_before_older_queued_runs(store: Store) -> None:
    # A backlog queued first; then a run claimed by worker A, whose lease ran out (A died).
    for i in range(30):
        store.enqueue(T, f"q{i}", b"", graph_name="g", graph_version="queued", durability="sync")
    store.enqueue(T, "x", b"", graph_name="g", graph_version="abandoned", durability="sync")
    claimed = store.claim_next(owner="A", lease_seconds=-1.0, graphs=[ABANDONED])
    assert claimed is not None and claimed[0].run_id == "x"
    # As if A had committed a step just before it died: x is the most recently updated row.
    assert store.get_run(T, "x").updated_at >= max(  # type: ignore[union-attr]
        store.get_run(T, f"q{i}").updated_at  # type: ignore[union-attr]
        for i in range(30)
    )

    order = []
    for _ in range(3):
        got = store.claim_next(owner="B", lease_seconds=30, graphs=[QUEUED, ABANDONED])
        assert got is not None
        order.append(got[0].run_id)
    assert order == ["x", "q0", "q1"]  # the takeover first, then the queue oldest first
    run = store.get_run(T, "x")
    assert run is not None and run.lease_owner == "B" and run.fencing_token == 2


def test_a_live_lease_is_not_taken_and_the_queue_stays_in_order(store: Store) -> None:
    for i in range(3):
        store.enqueue(T, f"q{i}", b"", graph_name="g", graph_version="queued", durability="sync")
    store.enqueue(T, "x", b"", graph_name="g", graph_version="abandoned", durability="sync")
    assert store.claim_next(owner="A", lease_seconds=60, graphs=[ABANDONED]) is not None
    order = []
    while got := store.claim_next(owner="B", lease_seconds=30, graphs=[QUEUED, ABANDONED]):
        order.append(got[0].run_id)
    assert order == ["q0", "q1", "q2"]
