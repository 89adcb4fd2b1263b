"""``multitask_strategy="rollback"``: the new run takes a busy thread as if the run holding
it had never been started.

The run holding the thread is cancelled at its next step boundary (as ``interrupt`` does),
then removed: the store rolls the thread back to the step that run started from
(``RollbackContract.roll_back``: its steps, questions and stream events go, its effect
records stay, and the audit log says who removed which steps of which API run) and its API
record is deleted, so fetching it is 404 as on LangGraph's platform. The thread's new
incarnation gives the steps the new run executes effect keys of their own: a charge the
rolled-back run made has happened (the provider has it, the ledger keeps it) and the new
run's charge at the same step is a new request, never answered by the old record.
"""

from __future__ import annotations

import time
import uuid

from wayline.control.keys import Principal
from wayline.errors import StoreError
from wayline.ids import rolled_back
from wayline.server.bell import Bell
from wayline.server.http import ApiError
from wayline.server.multitask import line_of
from wayline.server.views import FINAL
from wayline.store.base import Store
from wayline.store.records import RunRecord
from wayline.store.server_tables import ServerTables

__all__ = ["ROLLBACK_WAIT", "rollback"]

ROLLBACK_WAIT = 30.0
"""How long a rollback waits for the thread's run to stop and its worker to let it go."""


def rollback(
    store: Store,
    tables: ServerTables,
    who: Principal,
    thread_id: str,
    run: RunRecord,
    *,
    bell: Bell,
    fallback: float,
) -> RunRecord:
    """Stop the API run holding the thread, remove what it wrote and its record; returns
    the thread's run as it is now (back at that API run's first step). Each try after the
    first waits for the run to move (``bell``), at most ``fallback`` seconds."""
    if run.engine != "wayline":
        raise ApiError(
            409,
            f"thread {thread_id} runs on the {run.engine} engine, whose checkpoints wayline "
            "does not roll back: use multitask_strategy interrupt (or reject) on it",
        )
    line = line_of(store, tables, who.tenant, thread_id)
    if line.waiting:  # a stopped run would take the next queued input, not roll back
        raise ApiError(
            409,
            f"thread {thread_id} has {len(line.waiting)} run(s) queued behind its current "
            "one (multitask_strategy enqueue): cancel them first, or enqueue this one too; "
            "nothing was rolled back",
        )
    current = line.latest_started()
    if current is None or current.status in FINAL:
        return run  # nothing of the API's holds it (queued input, or a run left earlier)
    after = current.start_step
    incarnation = rolled_back(run.incarnation, after, uuid.uuid4().hex[:12])
    deadline = time.monotonic() + ROLLBACK_WAIT
    with bell.subscribe_blocking(who.tenant, thread_id) as waiter:  # before the cancel
        store.request_cancel(who.tenant, thread_id)
        while True:
            waiter.clear()  # the run's stop from here on wakes the wait below
            try:
                store.roll_back(
                    who.tenant,
                    thread_id,
                    after_step=after,
                    incarnation=incarnation,
                    actor=who.actor,
                    reason=f"run {current.run_id}: multitask_strategy=rollback",
                )
                break
            except StoreError:  # not stopped yet, or its worker has not let it go
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ApiError(
                        409,
                        f"thread {thread_id}'s run {current.run_id} did not stop within "
                        f"{ROLLBACK_WAIT:.0f}s of being cancelled for a rollback (its worker "
                        "is in a long step); nothing was removed: try again, or join it",
                    ) from None
                waiter.wait(min(fallback, left))
    tables.delete_run(who.tenant, current.run_id)
    found = store.get_run(who.tenant, thread_id)
    assert found is not None
    return found
