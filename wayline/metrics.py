"""wayline's own metrics: histograms and counters kept in the process, whatever is installed.

Each figure the checkpointing reference asks a production deployment to watch is recorded
here, at the one place it happens, as a histogram with fixed bucket bounds (so series add up
across processes and minutes) and a few attributes of low cardinality: a graph's name, never
a run's id.

- ``wayline.commit.duration`` (ms; ``grouped``): every store transaction that commits run
  batches, one value per run batch in it (``wayline.store.observe``);
- ``wayline.reconstruct.duration`` (ms; ``graph``, ``recovery``): a run loop's read of a
  run's committed state, and ``wayline.replay.depth`` (deltas) the deltas it folded after
  its snapshot; for a LangGraph graph on a worker, the first checkpoint read of a claim
  (``WaylineSaver.get_tuple``) and the deltas of the value chains it folded;
- ``wayline.node.duration`` (ms; ``graph``, ``node``): each node attempt;
- ``wayline.step.bytes`` (By; ``graph``, ``table``, ``class``): what each step a worker
  committed wrote, per table and data class;
- ``wayline.run.steps`` (``graph``) and ``wayline.run.first_to_last`` (bytes per step in
  the last tenth over the first): each run a worker finished;
- ``wayline.verify.runs`` (a counter; ``graph``, ``outcome``): each scheduled verification
  (``wayline.worker.verifier``).

``recovery="true"`` marks a read made after a takeover: the claim took the run from a worker
whose lease had expired (it died or stalled). Every other read (a new run's input, a resume
after an approval, a retry, a graceful hand-over) is ``recovery="false"``; the mean of all
reads is dominated by those warm resumes and says nothing about the case that hurts.

OpenTelemetry reads these (``wayline.otel``); workers flush them to the store a minute at a
time (``wayline.metrics_flush``) so the dashboard's health page shows every process's.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from wayline.store import observe

__all__ = [
    "METRICS",
    "REGISTRY",
    "Metric",
    "Registry",
    "SeriesKey",
    "observe_read",
    "record",
    "timed_call",
]

Attrs = tuple[tuple[str, str], ...]
SeriesKey = tuple[str, str, Attrs]
"""(metric, tenant, attributes sorted by name)."""

_MS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
_COUNT = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 100000)
_BYTES = (16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
_RATIO = (0.25, 0.5, 0.8, 0.9, 1.1, 1.25, 1.5, 2, 4, 8, 16)


@dataclasses.dataclass(frozen=True, slots=True)
class Metric:
    name: str
    unit: str
    description: str
    bounds: tuple[float, ...]
    """Upper bounds of the buckets; one more bucket holds what is above the last."""
    kind: Literal["histogram", "counter"] = "histogram"


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("wayline.commit.duration", "ms", "store commit latency, per run batch", _MS),
        Metric("wayline.reconstruct.duration", "ms", "reading a run's state to continue it", _MS),
        Metric("wayline.replay.depth", "deltas", "deltas folded after the snapshot", _COUNT),
        Metric("wayline.node.duration", "ms", "one attempt of one node", _MS),
        Metric("wayline.step.bytes", "By", "bytes a step wrote, per table and class", _BYTES),
        Metric("wayline.run.steps", "steps", "supersteps of each finished run", _STEPS),
        Metric(
            "wayline.run.first_to_last",
            "1",
            "bytes per step in the last tenth of a finished run over the first tenth",
            _RATIO,
        ),
        Metric("wayline.verify.runs", "runs", "scheduled verifications", (), kind="counter"),
    )
}


class Series:
    """One metric's counts for one tenant and set of attributes."""

    __slots__ = ("bounds", "buckets", "count", "total")

    def __init__(self, size: int, bounds: tuple[float, ...] = ()) -> None:
        self.bounds = bounds
        self.buckets = [0] * size
        self.count = 0
        self.total = 0.0

    def copy(self) -> Series:
        out = Series(0, self.bounds)
        out.buckets, out.count, out.total = list(self.buckets), self.count, self.total
        return out


class Registry:
    """The process's series. ``record`` is cheap (a dict lookup, a bisect, a lock held for
    three additions): it runs on every commit and every node attempt."""

    def __init__(self) -> None:
        self._series: dict[SeriesKey, Series] = {}
        self._lock = threading.Lock()
        self.listeners: list[Callable[[str, float, str, Attrs], None]] = []
        """Called with each recorded value (``wayline.otel`` forwards them)."""

    def record(self, name: str, value: float, tenant: str, attrs: Attrs) -> None:
        key = (name, tenant, attrs)
        series = self._series.get(key)
        if series is None:
            bounds = METRICS[name].bounds
            with self._lock:
                series = self._series.setdefault(key, Series(len(bounds) + 1, bounds))
        index = bisect.bisect_left(series.bounds, value)
        with self._lock:
            series.buckets[index] += 1
            series.count += 1
            series.total += value
        if self.listeners:
            for listener in self.listeners:
                listener(name, value, tenant, attrs)

    def snapshot(self) -> dict[SeriesKey, Series]:
        """A copy of every series (cumulative since the process started)."""
        with self._lock:
            return {k: s.copy() for k, s in self._series.items()}

    def count(self, name: str, **match: str) -> int:
        """How many values of ``name`` were recorded with these attributes (tests count)."""
        return sum(s.count for _, s in self.matching(name, **match))

    def matching(self, name: str, **match: str) -> Iterator[tuple[SeriesKey, Series]]:
        for key, series in self.snapshot().items():
            attrs = dict(key[2])
            if key[0] == name and all(attrs.get(k) == v for k, v in match.items()):
                yield key, series


REGISTRY = Registry()


def record(name: str, value: float, *, tenant: str = "default", **attrs: str) -> None:
    """Record ``value`` of metric ``name`` (a key of ``METRICS``)."""
    REGISTRY.record(name, value, tenant, tuple(sorted(attrs.items())))


def observe_read(graph: str, tenant: str, started: float, folds: int, *, recovery: bool) -> None:
    """A run loop read a run's committed state: how long (since ``started``, a
    ``perf_counter``) and how many deltas it folded after the snapshot."""
    ms = (time.perf_counter() - started) * 1000
    flag = "true" if recovery else "false"
    record("wayline.reconstruct.duration", ms, tenant=tenant, graph=graph, recovery=flag)
    record("wayline.replay.depth", folds, tenant=tenant, graph=graph, recovery=flag)


def timed_call(
    call: tuple[Any, tuple[Any, ...]], graph: str, node: str, tenant: str, *, is_async: bool
) -> tuple[Any, tuple[Any, ...]]:
    """A node's (callable, arguments) whose call records ``wayline.node.duration``."""
    fn, args = call
    attrs = (("graph", graph), ("node", node))

    if is_async:

        async def timed_async(*a: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*a)
            finally:
                ms = (time.perf_counter() - start) * 1000
                REGISTRY.record("wayline.node.duration", ms, tenant, attrs)

        return timed_async, args

    def timed(*a: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*a)
        finally:
            REGISTRY.record(
                "wayline.node.duration", (time.perf_counter() - start) * 1000, tenant, attrs
            )

    return timed, args


def _committed(tenants: Sequence[str], seconds: float) -> None:
    """Each run batch of a committed transaction: one ``wayline.commit.duration`` value."""
    attrs = (("grouped", "true" if len(tenants) > 1 else "false"),)
    for tenant in tenants:
        REGISTRY.record("wayline.commit.duration", seconds * 1000, tenant, attrs)


observe.listen(_committed)
