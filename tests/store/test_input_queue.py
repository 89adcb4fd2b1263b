"""The queue of input behind a busy run (``QueueContract``), on every backend: inputs wait
while the run is held, the claim query moves the oldest into the inbox once the run stops
(in order, one at a time), a parked run keeps its queue, a waiting input can be dropped,
and purge takes the queue with the run."""

from __future__ import annotations

from wayline.store.base import Store
from wayline.store.records import CommitBatch, DeltaRecord, RunProgress, RunStatus, RunUpdate

T = "tenant-a"
G = [("g", "1", "")]


def _running(store: Store, run_id: str = "r1") -> int:
    store.enqueue(T, run_id, b"first", graph_name="g", graph_version="1", durability="sync")
    claimed = store.claim_next(owner="w1", lease_seconds=30, graphs=G)
    assert claimed is not None and claimed[0].inbox == b"first"
    return claimed[1]


def _finish(store: Store, token: int, step: int, status: RunStatus = "done") -> None:
    batch = CommitBatch(deltas=[DeltaRecord(step, b"x")], run=RunUpdate(status, step, ()))
    batch.take_inbox = True
    store.commit(T, "r1", token, batch)
    store.release(T, "r1", token)


def test_queued_input_waits_for_the_run_then_moves_in_order(store: Store) -> None:
    token = _running(store)
    assert store.queue_input(T, "r1", b"second", label="api-2") == 1
    assert store.queue_input(T, "r1", b"third", label="api-3") == 2
    assert store.promote_queued() == 0  # held by a live lease, running: nothing moves
    assert store.claim_next(owner="w2", lease_seconds=30, graphs=G) is None
    waiting = store.queued_inputs(T, "r1")
    assert [(q.label, q.seq, q.promoted_at) for q in waiting] == [
        ("api-2", 1, None),
        ("api-3", 2, None),
    ]

    _finish(store, token, 0)
    claimed = store.claim_next(owner="w2", lease_seconds=30, graphs=G)
    assert claimed is not None
    run, token = claimed
    assert run.inbox == b"second" and run.status == "running"
    first, second = store.queued_inputs(T, "r1")
    assert first.promoted_at is not None and first.from_step == 0
    assert first.prior_status == "done"
    assert second.promoted_at is None  # one at a time: the next waits for this one

    _finish(store, token, 1, status="failed")  # how an input ends does not stop the queue
    claimed = store.claim_next(owner="w3", lease_seconds=30, graphs=G)
    assert claimed is not None and claimed[0].inbox == b"third"
    _, second = store.queued_inputs(T, "r1")
    assert second.from_step == 1 and second.prior_status == "failed"
    assert store.held_bytes(T, "r1")["run_queue"] == 0  # moved entries keep no payload


def test_a_parked_run_keeps_its_queue_and_a_waiting_input_can_be_dropped(store: Store) -> None:
    token = _running(store)
    store.queue_input(T, "r1", b"second", label="api-2")
    store.queue_input(T, "r1", b"third", label="api-3")
    _finish(store, token, 0, status="parked")
    assert store.claim_next(owner="w2", lease_seconds=30, graphs=G) is None
    assert store.drop_queued(T, "r1", "api-2") is True
    assert store.drop_queued(T, "r1", "api-2") is False
    assert [q.label for q in store.queued_inputs(T, "r1")] == ["api-3"]
    assert store.queued_inputs("tenant-b", "r1") == []  # tenants never see each other's


def test_a_cancelled_run_takes_its_queued_input_and_purge_removes_the_queue(
    store: Store,
) -> None:
    token = _running(store)
    step = CommitBatch(deltas=[DeltaRecord(0, b"x")], run=RunUpdate("running", 0, ("a",)))
    step.take_inbox = True
    store.commit(T, "r1", token, step)
    store.queue_input(T, "r1", b"second", label="api-2")
    store.request_cancel(T, "r1")
    run = store.get_run(T, "r1")
    assert run is not None and run.status == "running"  # held: it stops at its next step
    store.release(T, "r1", run.fencing_token)
    store.request_cancel(T, "r1")  # unheld now: cancelled at once
    claimed = store.claim_next(owner="w2", lease_seconds=30, graphs=G)
    assert claimed is not None and claimed[0].inbox == b"second"
    assert not claimed[0].cancel_requested
    assert store.queued_inputs(T, "r1")[0].prior_status == "cancelled"
    store.queue_input(T, "r1", b"third", label="api-3")
    store.purge_run(T, "r1")
    assert store.queued_inputs(T, "r1") == []


def _progress_matches_the_row(store: Store, run_id: str = "r1") -> RunProgress:
    run, progress = store.get_run(T, run_id), store.run_progress(T, run_id)
    assert run is not None and progress is not None
    assert progress == RunProgress(
        run.status, run.step, run.error, run.fencing_token, run.inbox is not None
    )
    return progress


def test_run_progress_is_the_rows_status_step_token_and_whether_input_waits(
    store: Store,
) -> None:
    """``run_progress``, the narrow read a stream makes each time its run moves, agrees
    with the whole row through a run's life: input waiting, claimed, finished, queued input
    moved in, failed."""
    assert store.run_progress(T, "nothing") is None
    store.enqueue(T, "r1", b"first", graph_name="g", graph_version="1", durability="sync")
    assert _progress_matches_the_row(store).input_waiting  # a start waits in the inbox
    claimed = store.claim_next(owner="w1", lease_seconds=30, graphs=G)
    assert claimed is not None
    assert _progress_matches_the_row(store).fencing_token == claimed[1]
    store.queue_input(T, "r1", b"second", label="api-2")
    _finish(store, claimed[1], 3)
    done = _progress_matches_the_row(store)
    assert (done.status, done.step, done.input_waiting) == ("done", 3, False)
    assert store.promote_queued() == 1  # the queued input moves in: waiting again
    assert _progress_matches_the_row(store).input_waiting
    again = store.claim_next(owner="w1", lease_seconds=30, graphs=G)
    assert again is not None
    store.note_error(T, "r1", token=again[1], error="ValueError: no", status="failed")
    failed = _progress_matches_the_row(store)
    assert (failed.status, failed.error) == ("failed", "ValueError: no")
