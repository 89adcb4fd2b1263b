"""The workers' metrics in the store: one row per tenant, metric, attribute set, minute and
process (``metric_samples``, 0018), so the dashboard shows what every worker recorded.

Kept beside the ``Store`` protocol, as the server's tables are: only workers (which write)
and the dashboard (which reads) use them, and they hold no run payload. The SQL is in
``wayline.store.sql.metric_queries``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any

from wayline.errors import StoreError
from wayline.store.base import Store
from wayline.store.sql import metric_queries
from wayline.store.sql_store import SQLStore

__all__ = ["MetricSamples", "SampleRow", "metric_samples"]


@dataclasses.dataclass(frozen=True, slots=True)
class SampleRow:
    """One minute of one metric's histogram, from one process."""

    tenant_id: str
    metric: str
    attrs: tuple[tuple[str, str], ...]
    minute: int
    """Unix time // 60."""
    count: int
    total: float
    buckets: tuple[int, ...]


class MetricSamples:
    def __init__(self, store: SQLStore) -> None:
        self.store = store
        ph = store.placeholder
        names = {k: v for k, v in vars(metric_queries).items() if k.startswith("Q_")}
        self.q = SimpleNamespace(**{k: v.replace("?", ph) for k, v in names.items()})

    def put(self, source: str, rows: Sequence[SampleRow]) -> None:
        """Write (replace) these minutes of ``source``: one transaction per tenant."""
        by_tenant: dict[str, list[tuple[Any, ...]]] = {}
        for r in rows:
            attrs = json.dumps(dict(r.attrs), sort_keys=True)
            row = (r.tenant_id, r.metric, attrs, r.minute, source, r.count, r.total)
            by_tenant.setdefault(r.tenant_id, []).append((*row, json.dumps(r.buckets)))
        for tenant, params in by_tenant.items():
            with self.store._tx(tenant) as db:
                db.executemany(self.q.Q_PUT_SAMPLE, params)

    def load(self, tenant_id: str, since_minute: int) -> list[SampleRow]:
        """The tenant's rows from ``since_minute`` on (every process's), oldest first."""
        backend: Any = self.store
        rows = backend._read_dicts(self.q.Q_LOAD_SAMPLES, (tenant_id, since_minute), tenant_id)
        out = []
        for r in rows:
            try:
                attrs = tuple(sorted(json.loads(r["attrs"]).items()))
                buckets = tuple(int(n) for n in json.loads(r["buckets"]))
            except (ValueError, TypeError, AttributeError):
                continue  # a damaged sample is left out of the figures, never fatal
            out.append(
                SampleRow(
                    tenant_id,
                    r["metric"],
                    attrs,
                    int(r["minute"]),
                    int(r["count"]),
                    float(r["total"]),
                    buckets,
                )
            )
        return out

    def prune(self, tenants: Iterable[str], before_minute: int) -> int:
        """Delete these tenants' rows older than ``before_minute`` (retention)."""
        deleted = 0
        for tenant in tenants:
            with self.store._tx(tenant) as db:
                deleted += int(db.execute(self.q.Q_PRUNE_SAMPLES, (tenant, before_minute)).rowcount)
        return deleted

    def verify_findings(
        self, tenant_id: str, since: float, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The audit's verification entries since ``since`` (what scheduled verification
        found wrong), newest first."""
        backend: Any = self.store
        rows: list[dict[str, Any]] = backend._read_dicts(
            self.q.Q_VERIFY_FINDINGS, (tenant_id, since, limit), tenant_id
        )
        return rows


def metric_samples(store: Store) -> MetricSamples:
    """The metric tables of an SQL store (an encrypted store's, through to the SQL under it:
    these rows hold counts, no payload to seal)."""
    inner: Any = getattr(store, "inner", store)
    if not isinstance(inner, SQLStore):
        raise StoreError(
            f"metrics are kept in an SQL store (SQLite or PostgreSQL), not {type(store).__name__}"
        )
    return MetricSamples(inner)
