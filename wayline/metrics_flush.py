"""Workers' metrics to the store, a minute at a time, so the dashboard sees every process's.

The process's registry (``wayline.metrics``) is cumulative; a flush takes what it gained
since the last flush and adds it to the current minute's histograms, then writes that
minute whole (``metric_samples``: one row per tenant, metric, attribute set, minute and
process, replaced on each flush). Rows older than the retention are deleted as it goes, so
the table holds at most ``retention`` minutes of a bounded number of series: the attributes
are graph names, tables, classes and flags, never run ids.

A finished run's step count is recorded by the slot that finished it, from what its last
commit wrote (no read); its first-to-last ratio needs the run's meter rows, so the slot hands
the id over (``run_finished``) and the flusher reads them off the slots when it next
flushes, for at most ``RATIO_SAMPLE`` runs a flush: a sample of the finished runs, so a busy
worker does not spend a read a run on a histogram.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping

from wayline.errors import WaylineError
from wayline.instrument import ByteReport
from wayline.metrics import REGISTRY, Series, SeriesKey, record
from wayline.store.base import Store
from wayline.store.metric_samples import SampleRow, metric_samples
from wayline.store.records import CommitBatch, RunRecord

__all__ = ["RATIO_SAMPLE", "SOURCE", "MetricsFlusher", "record_step_bytes"]

log = logging.getLogger("wayline.metrics")

SOURCE = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
"""This process, as its metric rows name it."""
RATIO_SAMPLE = 100
"""Finished runs whose first-to-last ratio one flush reads (the rest of them are dropped)."""


class _Window:
    """The current minute's histograms, gained from the registry flush after flush. One for
    the process: two workers of one process flush the same figures, never twice."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: dict[SeriesKey, Series] = {}
        self.minute = -1
        self.current: dict[SeriesKey, Series] = {}

    def advance(self, now: float) -> tuple[int, dict[SeriesKey, Series]]:
        with self.lock:
            minute = int(now // 60)
            if minute != self.minute:
                self.minute, self.current = minute, {}
            snap = REGISTRY.snapshot()
            for key, series in snap.items():
                before = self.last.get(key)
                gained = series.count - (before.count if before else 0)
                if gained <= 0:
                    continue
                into = self.current.get(key)
                if into is None:
                    into = self.current[key] = Series(len(series.buckets), series.bounds)
                into.count += gained
                into.total += series.total - (before.total if before else 0.0)
                old = before.buckets if before else [0] * len(series.buckets)
                for i, (n, m) in enumerate(zip(series.buckets, old, strict=True)):
                    into.buckets[i] += n - m
            self.last = snap
            return minute, {k: s.copy() for k, s in self.current.items()}


_WINDOW = _Window()


class MetricsFlusher:
    """Flushes the process's metrics to ``store`` every ``every`` seconds."""

    def __init__(
        self, store: Store, *, every: float = 10.0, retention_minutes: int = 24 * 60
    ) -> None:
        self.samples = metric_samples(store)
        self.store = store
        self.every = every
        self.retention_minutes = retention_minutes
        self.finished: collections.deque[tuple[str, str, str, bool]] = collections.deque(
            maxlen=RATIO_SAMPLE
        )
        """(tenant, run id, graph, whether its steps are recorded) of runs finished since the
        last flush (the oldest are dropped past ``RATIO_SAMPLE``: a sample, never a backlog)."""
        self._pruned = 0.0

    def run_finished(self, run: RunRecord, last_step: int | None = None) -> None:
        """A run ended ``done``; ``last_step``, when its execution knows it, is recorded now."""
        tenant, graph = run.tenant_id, run.graph_name
        if last_step is not None:
            record("wayline.run.steps", last_step + 1, tenant=tenant, graph=graph)
        self.finished.append((tenant, run.run_id, graph, last_step is not None))

    def flush(self, now: float | None = None) -> int:
        """Write the current minute; returns the rows written."""
        now = time.time() if now is None else now
        self._finished_runs()
        minute, current = _WINDOW.advance(now)
        rows = [
            SampleRow(tenant, name, attrs, minute, s.count, s.total, tuple(s.buckets))
            for (name, tenant, attrs), s in current.items()
        ]
        self.samples.put(SOURCE, rows)
        if now - self._pruned > 600:
            self._pruned = now
            tenants = {tenant for _, tenant, _ in REGISTRY.snapshot()}
            self.samples.prune(tenants, minute - self.retention_minutes)
        return len(rows)

    def loop(self, stopping: threading.Event) -> None:
        """Flush every ``every`` seconds until ``stopping``, and once more then."""
        while True:
            stopped = stopping.wait(self.every)
            try:
                self.flush()
            except WaylineError as exc:  # the store is away: the figures wait for the next
                log.warning("metrics flush failed: %s", exc)
            if stopped:
                return

    def _finished_runs(self) -> None:
        while self.finished:
            tenant, run_id, graph, recorded = self.finished.popleft()
            try:
                run = None if recorded else self.store.get_run(tenant, run_id)
                meter = self.store.load_meter(tenant, run_id)
            except WaylineError:
                continue
            if run is not None and run.status == "done":
                record("wayline.run.steps", run.step + 1, tenant=tenant, graph=graph)
            ratio = ByteReport(run_id, meter).first_to_last
            if ratio == ratio:  # not NaN: the run wrote bytes at its start
                record("wayline.run.first_to_last", ratio, tenant=tenant, graph=graph)


def record_step_bytes(
    graph: str, tenant: str, classes: Mapping[str, str], batch: CommitBatch
) -> None:
    """``wayline.step.bytes`` of a committed batch: per step, table and data class, from the
    breakdown its delta, snapshot, pending-write and interrupt rows carry (the store meters
    segments, blobs and effects as its inserts take effect: those are on the health page
    from the stored rows). On every commit of a worker, so a step's delta is summed straight
    from its pairs (3-5 us, against 18 through ``MeterRow`` objects: the 2-core dev machine,
    under load)."""
    sums: dict[tuple[int, str, str], int] = {}
    for d in batch.deltas:
        framing = len(d.payload)
        for channel, n in d.channels:
            framing -= n
            key = (d.step, "deltas", classes.get(channel, "default") if classes else "default")
            sums[key] = sums.get(key, 0) + n
        if framing or not d.channels:
            key = (d.step, "deltas", "framing")
            sums[key] = sums.get(key, 0) + framing
    if batch.snapshots or batch.pending or batch.interrupts:
        rows = [m for r in batch.snapshots for m in r.meter()] + batch.meter()
        for m in rows:
            cls = "framing" if not m.channel else classes.get(m.channel, "default")
            key = (m.step, m.table, cls)
            sums[key] = sums.get(key, 0) + m.bytes
    for (_, table, cls), n in sums.items():
        REGISTRY.record(
            "wayline.step.bytes", n, tenant, (("class", cls), ("graph", graph), ("table", table))
        )
