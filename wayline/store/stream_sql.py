"""Node-emitted stream events over SQL (stream modes ``custom`` and ``messages`` of a run
whose input asked for them), written once for SQLite and PostgreSQL.

Kept apart from ``sql_store`` like the LangGraph tables: ``SQLStore`` inherits these
methods; they use only its ``_tx``, ``_read``, ``q`` and ``payloads``. A worker appends a
step's events in one transaction fenced by its lease token, numbered on from the run's
last (one writer per run: the lease holder); the server reads them back after the last
sequence number it sent. Each payload goes through ``payloads`` (sealed when encrypted,
checksummed over its identity) and is metered (table ``stream_events``, channel = mode).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from wayline.store import observe
from wayline.store.payloads import Payloads

__all__ = ["StreamEvent", "StreamEventsContract", "StreamEventsSQL", "stream_event_ident"]


@dataclasses.dataclass(frozen=True, slots=True)
class StreamEvent:
    """One chunk a node emitted while step ``step`` ran; ``seq`` orders a run's events."""

    step: int
    node: str
    mode: str
    payload: bytes
    seq: int = 0


def stream_event_ident(tenant_id: str, run_id: str, seq: int) -> tuple[Any, ...]:
    return ("stream_events", tenant_id, run_id, seq)


class StreamEventsContract(Protocol):
    """Node-emitted stream events (custom, messages) for the server's streams."""

    def append_stream_events(
        self, tenant_id: str, run_id: str, token: int, events: Sequence[StreamEvent]
    ) -> int:
        """Append a step's events after the run's last, fenced by the lease ``token``;
        returns how many were stored (0: the lease is gone)."""
        ...

    def load_stream_events(
        self, tenant_id: str, run_id: str, *, after_seq: int, after_step: int, to_step: int
    ) -> list[StreamEvent]:
        """Events numbered after ``after_seq``, of steps in (``after_step``, ``to_step``]."""
        ...

    def last_stream_event(self, tenant_id: str, run_id: str, mode: str) -> StreamEvent | None:
        """The run's last event of ``mode`` (None: none)."""
        ...


class StreamEventsSQL:
    q: SimpleNamespace
    payloads: Payloads

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self, query: str, params: Sequence[Any], tenant: str | None = None) -> list[Any]:
        raise NotImplementedError

    if TYPE_CHECKING:  # SQLCore's: other processes hear of the events with the commit

        def _announce(self, db: Any, runs: Sequence[tuple[str, str]]) -> None: ...

    def append_stream_events(
        self, tenant_id: str, run_id: str, token: int, events: Sequence[StreamEvent]
    ) -> int:
        """Append ``events`` after the run's last, if ``token`` still holds its lease;
        returns how many were stored (0: the lease is gone, nothing was written)."""
        if not events:
            return 0
        q = self.q
        now = time.time()
        stored = 0
        with self._tx(tenant_id) as db:
            (last,) = db.execute(q.Q_NEXT_STREAM_SEQ, (tenant_id, run_id)).fetchone()
            meter = []
            for i, e in enumerate(events, start=int(last) + 1):
                data, crc = self.payloads.put(
                    stream_event_ident(tenant_id, run_id, i), tenant_id, f"{run_id}|v", e.payload
                )
                row = (tenant_id, run_id, i, e.step, e.node, e.mode, data, crc, now)
                if db.execute(q.Q_PUT_STREAM_EVENT, (*row, tenant_id, run_id, token)).rowcount:
                    stored += 1
                    meter.append((tenant_id, run_id, e.step, "stream_events", e.mode, len(data)))
            if meter:
                db.executemany(q.Q_PUT_METER, meter)
                self._announce(db, ((tenant_id, run_id),))
        if stored:
            observe.moved(((tenant_id, run_id),))  # a stream reading them wakes
        return stored

    def load_stream_events(
        self, tenant_id: str, run_id: str, *, after_seq: int, after_step: int, to_step: int
    ) -> list[StreamEvent]:
        """The run's events numbered after ``after_seq`` from steps after ``after_step`` up
        to ``to_step``, in the order they were emitted."""
        rows = self._read(
            self.q.Q_LOAD_STREAM_EVENTS,
            (tenant_id, run_id, after_seq, after_step, to_step),
            tenant=tenant_id,
        )
        out = []
        for seq, step, node, mode, stored, crc in rows:
            ident = stream_event_ident(tenant_id, run_id, int(seq))
            data = self.payloads.get(ident, tenant_id, f"{run_id}|v", stored, crc)
            out.append(StreamEvent(int(step), node, mode, data, int(seq)))
        return out

    def last_stream_event(self, tenant_id: str, run_id: str, mode: str) -> StreamEvent | None:
        """The run's last event of ``mode`` (None: none): one read of the run's rows, made
        by a worker that takes a run over without its queued input."""
        rows = self._read(self.q.Q_LAST_STREAM_MARK, (tenant_id, run_id, mode), tenant=tenant_id)
        if not rows:
            return None
        seq, step, node, mode, stored, crc = rows[0]
        ident = stream_event_ident(tenant_id, run_id, int(seq))
        data = self.payloads.get(ident, tenant_id, f"{run_id}|v", stored, crc)
        return StreamEvent(int(step), node, mode, data, int(seq))
