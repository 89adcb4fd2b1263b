"""When to snapshot: when replaying the deltas since the last snapshot would cost more than a
fraction of reading a snapshot, so that reading a run at any step costs about what reading
it at a snapshot step costs; ``snapshot_every`` stays the upper bound on the steps between
two snapshots.

A fixed step count bounds the wrong thing. Reading at a snapshot step costs the snapshot's
row and its append logs' segments (the whole state, in bytes); reading just before the next
one adds every delta since, each a row fetched, checked, decoded and folded. With the
default of 100, a 1,000-step run of the accumulating workload read in 3.3 ms at its worst
position against 1.3 ms at a snapshot step, while a 10,000-step run, whose
snapshot read is ten times larger, barely noticed the same 99 deltas. So the policy keeps
the fold work since the last snapshot under ``FOLD_SHARE`` of the snapshot read, both
counted in byte-equivalents: a delta costs ``FOLD_ROW`` plus its bytes, a snapshot read
``READ_ROW`` plus the bytes of the state it restores.

It never gives the flat bytes back: a snapshot is taken only once the deltas since the last
one hold ``WRITE_FACTOR`` times the last snapshot's own payload (the segments of append logs
are written once whatever the cadence, ``wayline.graph.segments``), so snapshots add at most
1 / WRITE_FACTOR to what a run writes. A state smaller than a snapshot read's fixed part (a
counter, a few replaced values) is read in about that fixed time at any position; there
``snapshot_every`` alone decides, as before.

Pure bookkeeping over sizes; the loop asks ``due`` each step and reports ``taken``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

__all__ = ["FOLD_ROW", "FOLD_SHARE", "READ_ROW", "WRITE_FACTOR", "SnapshotPolicy"]

FOLD_ROW = 5_000
"""Replaying one delta (fetch, checksum, decode, fold), in bytes of snapshot read it costs
as much as: ~13 us a delta against ~2.5 ns a snapshot byte on the 2-vCPU dev machine
(bench/resume.py: 40 deltas added 0.5 ms to a 1.3 ms read of 520 KB)."""
READ_ROW = 50_000
"""The fixed part of reading a snapshot (its row, its index, the queries)."""
FOLD_SHARE = 0.1
"""The fold work allowed since the last snapshot, as a share of reading one: the worst read
is then about 1 + FOLD_SHARE times the read at a snapshot step in the model, and a delta
folded in a 5.5 MB state cost nearer 20 us than the model's 13 (caches), so the share is
half the 0.3 the goal of 1.3x allows."""
WRITE_FACTOR = 8
"""Delta bytes since the last snapshot before the next may be taken, in multiples of its
payload: snapshots add at most 1/8 to a run's bytes. Measured (bench/checkpoint_bytes.py,
accumulating workload) against 16 with a share of 0.2: 1,111 against 1,063 B/step at 1,000
steps, but 1,383 against 1,495 at 10,000 (write amplification 2.73 against 2.95: segments
merge at other steps); folds at the worst position of a 1,000-step run 33 against 47. A
state under ``READ_ROW`` takes no snapshot by this rule (a replaced 500-byte value: 563
B/step either way)."""


@dataclasses.dataclass(slots=True)
class SnapshotPolicy:
    every: int
    """The most steps between two snapshots (``compile(snapshot_every=...)``)."""
    last: int = -1
    """Step of the last snapshot (-1: none yet)."""
    fold: int = 0
    """Fold work since the last snapshot, in byte-equivalents."""
    delta_bytes: int = 0
    """Delta bytes written since the last snapshot."""
    snapshot_bytes: int = 0
    """Payload bytes of the last snapshot."""
    log_bytes: int = 0
    """Bytes of every append log's items (their deltas' bytes, which the segments hold): with
    the snapshot's payload, what a read at a snapshot step restores."""

    def resume(self, snapshot_step: int | None, folds: int, bytes_read: int) -> None:
        """Start from a reconstruction: its snapshot and the deltas it re-folded."""
        self.last = -1 if snapshot_step is None else snapshot_step
        self.fold = folds * FOLD_ROW
        self.delta_bytes = 0
        self.log_bytes = bytes_read
        self.snapshot_bytes = 0

    def due(
        self, step: int, delta: int, channels: Iterable[tuple[str, int]], logs: AbstractSet[str]
    ) -> bool:
        """Note this step's delta (``delta`` bytes; per-channel ``channels``); True when a
        snapshot should be written with it."""
        self.fold += FOLD_ROW + delta
        self.delta_bytes += delta
        self.log_bytes += sum(n for key, n in channels if key in logs)
        if step <= 0:
            return False
        if step - max(self.last, 0) >= self.every:
            return True
        state = self.snapshot_bytes + self.log_bytes
        if state < READ_ROW or self.delta_bytes < WRITE_FACTOR * self.snapshot_bytes:
            return False  # a small state: its fixed costs decide, ``every`` bounds the folds
        return self.fold > FOLD_SHARE * (READ_ROW + state)

    def taken(self, step: int, payload: int) -> None:
        self.last = step
        self.fold = 0
        self.delta_bytes = 0
        self.snapshot_bytes = payload
