"""Scheduled verification: a worker re-reads finished runs, one at a time, at a rate an
operator sets (``WorkerConfig.verify_rate``, ``wayline worker --verify-rate``).

Each verification is ``wayline runs verify`` (``wayline.control.integrity.check_run``) of
one finished run of a graph this worker serves: every payload row against its checksum, the
state folded from the rows and compared with the digest the run's last commit recorded. The
result is a metric (``wayline.verify.runs`` by graph and outcome: ``ok``, ``diverged``,
``corrupt``); what is wrong is also in the run's audit (action ``verify``, outcome
``diverged`` or ``corrupt``, once per finding: a run found wrong again adds no entry) and on
the dashboard's health page. The run itself is left as it is: it finished, and its rows are
the evidence an operator needs.

Runs are taken in turn, most recently finished first, walking back through the tenant's
finished runs and starting over at the end, so every finished run is verified again every
(finished runs / rate) minutes, and a new one soon after it finishes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from wayline.control.integrity import check_run
from wayline.errors import WaylineError
from wayline.graph.compiled import CompiledGraph
from wayline.metrics import record
from wayline.store.base import Store
from wayline.store.records import AuditRecord, RunRecord

__all__ = ["Verifier", "verifiable"]

log = logging.getLogger("wayline.worker")


class Verifier:
    """Verifies the finished runs of ``graphs`` ((name, version) -> graph) in turn."""

    def __init__(
        self,
        store: Store,
        graphs: Mapping[tuple[str, str], CompiledGraph],
        *,
        actor: str,
        tenant: str | None = None,
    ) -> None:
        self.store = store
        self.graphs = dict(graphs)
        self.actor = actor
        self.tenant = tenant
        self._cursor: dict[str, int] = {}
        self._turn = 0
        self.verified = 0

    def verify_next(self) -> str | None:
        """Verify the next finished run; its outcome (None: no finished run to verify)."""
        tenants = [self.tenant] if self.tenant is not None else self.store.tenants()
        for _ in range(len(tenants)):
            tenant = tenants[self._turn % len(tenants)]
            self._turn += 1
            run = self._next_run(tenant)
            if run is not None:
                return self.verify(run)
        return None

    def _next_run(self, tenant: str) -> RunRecord | None:
        """The tenant's next finished run of a graph served here (a page at a time)."""
        for _ in range(2):  # at the end: start over once
            offset = self._cursor.get(tenant, 0)
            page = self.store.list_runs(tenant, status="done", limit=50, offset=offset)
            for i, run in enumerate(page):
                if (run.graph_name, run.graph_version) in self.graphs and run.state_digest:
                    self._cursor[tenant] = offset + i + 1
                    return run
            if len(page) == 50:
                self._cursor[tenant] = offset + 50
                return None  # a page of others' runs: the next turn reads on
            self._cursor[tenant] = 0
            if offset == 0:
                return None
        return None

    def verify(self, run: RunRecord) -> str:
        """Verify one finished run: record the outcome, audit what is wrong."""
        graph = self.graphs[(run.graph_name, run.graph_version)]
        try:
            report = check_run(self.store, run.tenant_id, run.run_id, graph)
        except WaylineError as exc:  # purged meanwhile, or the store is away
            log.warning("verification of run %s could not run: %s", run.run_id, exc)
            return "skipped"
        self.verified += 1
        if report.ok:
            outcome = "ok"
        else:
            outcome = "diverged" if report.digest_ok is False else "corrupt"
            self._audit(run, outcome, "; ".join(report.problems))
            log.error("run %s %s on verification: %s", run.run_id, outcome, report.problems)
        record(
            "wayline.verify.runs", 1, tenant=run.tenant_id, graph=run.graph_name, outcome=outcome
        )
        return outcome

    def _audit(self, run: RunRecord, outcome: str, detail: str) -> None:
        seen = self.store.load_audit(run.tenant_id, run.run_id)
        if any(a.action == "verify" and a.detail == detail for a in seen):
            return  # found before: once per finding
        entry = AuditRecord(
            run.tenant_id, run.run_id, self.actor, "verify", outcome, detail=detail, at=time.time()
        )
        self.store.append_audit(entry)

    def loop(self, rate_per_minute: float, stopping: threading.Event) -> None:
        """Verify ``rate_per_minute`` runs a minute until ``stopping``."""
        interval = 60.0 / rate_per_minute
        while not stopping.wait(interval):
            try:
                self.verify_next()
            except WaylineError as exc:
                log.warning("scheduled verification failed: %s", exc)


def verifiable(graphs: Mapping[tuple[str, str], Any]) -> dict[tuple[str, str], CompiledGraph]:
    """The graphs of a worker's engines that verification can fold (wayline's own)."""
    out = {}
    for key, engine in graphs.items():
        graph = getattr(engine, "graph", None)
        if isinstance(graph, CompiledGraph):
            out[key] = graph
    return out
