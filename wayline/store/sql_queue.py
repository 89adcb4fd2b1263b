"""A busy run's queued input over SQL: the contract (``QueueContract``) and the SQL that
keeps it (``QueueSQL``), written once for SQLite and PostgreSQL.

A run's inbox holds one input for a worker to apply. An input given while the run is busy
(the server's ``multitask_strategy="enqueue"``) waits in ``run_queue`` instead, labelled
with the caller's id for it. Nothing has to remember to start it: ``claim_next`` first
moves the oldest queued input of every run that has stopped into that run's inbox (the
claim query is the wake-up path, as for retries and timers), so whichever worker serves
the graph takes it, in the order the inputs were queued, whether or not the worker that ran
the input before it survived. A moved entry keeps its label, where its input began
(``from_step``) and how the input before it ended (``prior_status``).
"""

from __future__ import annotations

import time
from typing import Protocol

from wayline.store.records import QueuedInput
from wayline.store.sql_core import Executor, SQLCore

__all__ = ["QueueContract", "QueueSQL", "inbox_ident"]


def inbox_ident(tenant_id: str, run_id: str) -> tuple[str, ...]:
    """The identity of a run's queued input (its checksum and sealing cover it): the same
    for the inbox and every queued entry, so an entry moves to the inbox as it is stored."""
    return ("runs", tenant_id, run_id, "inbox")


class QueueContract(Protocol):
    """Inputs waiting for a busy run to stop, oldest first."""

    def queue_input(self, tenant_id: str, run_id: str, inbox: bytes, *, label: str) -> int:
        """Queue ``inbox`` (as ``enqueue`` encodes it) behind the run's current input;
        returns its place (1, 2, ...). The run must exist. Wakes workers."""
        ...

    def queued_inputs(self, tenant_id: str, run_id: str) -> list[QueuedInput]:
        """Every input queued on the run, waiting or moved to its inbox, by place."""
        ...

    def drop_queued(self, tenant_id: str, run_id: str, label: str) -> bool:
        """Take a still-waiting input out of the queue (False: none waits by that label)."""
        ...

    def promote_queued(self, tenant_id: str | None = None) -> int:
        """Move the oldest queued input of each stopped run no live lease holds into its
        inbox (``claim_next`` does this first); returns how many moved."""
        ...


class QueueSQL(SQLCore):
    """``QueueContract`` over SQL (``SQLStore`` inherits it)."""

    def queue_input(self, tenant_id: str, run_id: str, inbox: bytes, *, label: str) -> int:
        with self._tx(tenant_id) as db:
            return self.queue_in(db, tenant_id, run_id, inbox, label=label)

    def queue_in(
        self, db: Executor, tenant_id: str, run_id: str, inbox: bytes, *, label: str
    ) -> int:
        """``queue_input`` inside a transaction of the caller's (a schedule's fire queues
        its tick's input with the tick it spends)."""
        stored, crc_ = self.payloads.put(
            inbox_ident(tenant_id, run_id), tenant_id, f"{run_id}|n", inbox
        )
        q = self.q
        db.execute(q.Q_LOCK_RUN, (tenant_id, run_id))
        params = (tenant_id, run_id, label, stored, crc_, time.time(), tenant_id, run_id)
        seq = int(db.execute(q.Q_QUEUE_INPUT, params).fetchone()[0])
        db.execute(q.Q_PUT_METER, (tenant_id, run_id, -1, "run_queue", "inbox", len(stored)))
        self._notify(db, one=True)
        return seq

    def queued_inputs(self, tenant_id: str, run_id: str) -> list[QueuedInput]:
        rows = self._read_dicts(self.q.Q_QUEUED_INPUTS, (tenant_id, run_id), tenant_id)
        return [QueuedInput.from_row(r) for r in rows]

    def drop_queued(self, tenant_id: str, run_id: str, label: str) -> bool:
        with self._tx(tenant_id) as db:
            return int(db.execute(self.q.Q_DROP_QUEUED, (tenant_id, run_id, label)).rowcount) > 0

    def promote_queued(self, tenant_id: str | None = None) -> int:
        with self._tx(tenant_id) as db:
            return self.promote_in(db, tenant_id, time.time())

    def promote_in(self, db: Executor, tenant_id: str | None, now: float) -> int:
        """``promote_queued`` inside the caller's transaction (the claim's: one statement
        when nothing is queued, the index ``run_queue_waiting`` holding only waiting
        entries)."""
        q = self.q
        moved = 0
        heads = db.execute(q.Q_QUEUE_HEADS, (now, tenant_id, tenant_id)).fetchall()
        for tenant, run_id, seq, inbox, crc_, step, status in heads:
            # conditional on what was read: a run that moved meanwhile keeps its queue
            params = (inbox, crc_, now, now, tenant, run_id, status, step, now)
            if db.execute(q.Q_PROMOTE_RUN, params).rowcount != 1:
                continue
            db.execute(q.Q_PROMOTE_ENTRY, (now, step, status, tenant, run_id, seq))
            moved += 1
        if moved:  # inside a claim, whose peek wakes a slot for each run it leaves
            self._notify(db, one=True)
        return moved
