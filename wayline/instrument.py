"""The instrument: what a run wrote, read back from the meter rows the store recorded at
the one place every durable byte passes (``Store.commit``). Sums are made here, on read;
the store keeps one row per commit, table and channel."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence

from wayline.store.base import Store
from wayline.store.records import MeterRow

__all__ = ["ByteReport", "byte_report"]


_WRITE_TABLES = ("deltas", "lg_writes")


def is_state_key(channel: str) -> bool:
    """Keys the user declared; "" is framing and ``__...`` keys are routing and indexes."""
    return bool(channel) and not channel.startswith("__")


@dataclasses.dataclass(frozen=True)
class ByteReport:
    run_id: str
    rows: Sequence[MeterRow]
    classes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The data class of each labelled channel, as the run recorded it."""

    def by_class(self) -> dict[str, int]:
        """Bytes per data class: labelled channels by their class, other channels
        "default", bytes of no channel (envelopes, sealing) "framing"."""
        out: dict[str, int] = defaultdict(int)
        for r in self.rows:
            cls = "framing" if not r.channel else self.classes.get(r.channel, "default")
            out[cls] += r.bytes
        return dict(out)

    @property
    def total(self) -> int:
        return sum(r.bytes for r in self.rows)

    def by_table(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for r in self.rows:
            out[r.table] += r.bytes
        return dict(out)

    def by_channel(self) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = defaultdict(int)
        for r in self.rows:
            out[(r.table, r.channel or "(framing)")] += r.bytes
        return dict(out)

    def by_step(self) -> dict[int, int]:
        out: dict[int, int] = defaultdict(int)
        for r in self.rows:
            out[r.step] += r.bytes
        return dict(sorted(out.items()))

    @property
    def payload(self) -> int:
        """Bytes of the values nodes wrote to state keys (a blob counts by its size; for a
        LangGraph thread, the tasks' writes to state keys)."""
        return sum(
            r.bytes
            for r in self.rows
            if (r.table in _WRITE_TABLES and is_state_key(r.channel)) or r.table == "blobs"
        )

    @property
    def write_amplification(self) -> float:
        """All bytes written over the payload produced: 1.0 would be the payload alone."""
        return self.total / self.payload if self.payload else float("nan")

    def decile_bytes_per_step(self) -> tuple[float, float]:
        """Average bytes per step over the first and the last tenth of the steps."""
        steps = self.by_step()
        if not steps:
            return (0.0, 0.0)
        first, last = min(steps), max(steps)
        width = max(1, (last - first + 1) // 10)
        head = [steps.get(s, 0) for s in range(first, first + width)]
        tail = [steps.get(s, 0) for s in range(last - width + 1, last + 1)]
        return (sum(head) / len(head), sum(tail) / len(tail))

    @property
    def first_to_last(self) -> float:
        """Bytes per step at the end over bytes per step at the start: flat is ~1."""
        head, tail = self.decile_bytes_per_step()
        return tail / head if head else float("nan")


def byte_report(store: Store, tenant_id: str, run_id: str) -> ByteReport:
    run = store.get_run(tenant_id, run_id)
    classes = dict(run.classes) if run is not None else {}
    return ByteReport(run_id, store.load_meter(tenant_id, run_id), classes)
