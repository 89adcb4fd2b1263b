"""The client: start runs for workers to execute, wait for them, resume, cancel, retry.

``start`` returns at once: the run's input goes into its inbox and any worker serving the
graph claims it (PostgreSQL wakes one with NOTIFY; SQLite workers poll). Nothing here
executes a node.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from wayline.codec import Codec, default_codec
from wayline.errors import RunNotFoundError, WaylineError
from wayline.graph.checkpoint import encode_inbox
from wayline.graph.compiled import CompiledGraph
from wayline.graph.types import Command
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.records import RunRecord, RunStatus

__all__ = ["SETTLED", "Wayline"]

SETTLED: frozenset[str] = frozenset({"done", "failed", "cancelled", "interrupted", "parked"})
"""Statuses in which a run waits for nobody but a person (or is over)."""


class Wayline:
    """A handle on a store for starting and steering runs.

    ``Wayline("sqlite:///runs.db")`` or ``Wayline(store)``; ``tenant`` is the default for
    every call and can be overridden per call.
    """

    def __init__(
        self, store: Store | str, *, tenant: str = "default", codec: Codec = default_codec
    ) -> None:
        self.store = open_store(store) if isinstance(store, str) else store
        self.tenant = tenant
        self.codec = codec

    def start(
        self,
        graph: CompiledGraph,
        input: Any,
        *,
        run_id: str | None = None,
        tenant: str | None = None,
        durability: str = "sync",
    ) -> str:
        """Queue a new run of ``graph``; returns its id. Starting an existing id again hands
        it a new input (as ``invoke`` on a finished thread would)."""
        run_id = run_id or uuid.uuid4().hex
        self.store.enqueue(
            tenant or self.tenant,
            run_id,
            encode_inbox(self.codec, input),
            graph_name=graph.name,
            graph_version=graph.version,
            durability=durability,
        )
        return run_id

    def resume(self, run_id: str, decision: Any, *, tenant: str | None = None) -> None:
        """Answer a run's pending interrupt; a worker continues the run with it."""
        run = self.get(run_id, tenant=tenant)
        if run.status != "interrupted":
            raise WaylineError(f"run {run_id!r} is {run.status}, not waiting for a decision")
        self.store.enqueue(
            run.tenant_id,
            run_id,
            encode_inbox(self.codec, Command(resume=decision)),
            graph_name=run.graph_name,
            graph_version=run.graph_version,
            durability=run.durability,
        )

    def get(self, run_id: str, *, tenant: str | None = None) -> RunRecord:
        run = self.store.get_run(tenant or self.tenant, run_id)
        if run is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant or self.tenant!r}")
        return run

    def wait(
        self,
        run_id: str,
        timeout: float = 60.0,
        *,
        tenant: str | None = None,
        poll: float = 0.05,
    ) -> RunRecord:
        """Block until the run settles (done, failed, cancelled, interrupted, parked)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.get(run_id, tenant=tenant)
            if run.status in SETTLED and run.inbox is None:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"run {run_id!r} is still {run.status} after {timeout}s "
                    "(is a worker serving its graph running?)"
                )
            time.sleep(poll)

    def cancel(self, run_id: str, *, tenant: str | None = None) -> bool:
        """Cancel now if no worker holds the run, else at its worker's next step."""
        return self.store.request_cancel(tenant or self.tenant, run_id)

    def retry(self, run_id: str, *, tenant: str | None = None) -> bool:
        """Put a failed (dead-lettered) or parked run back in the queue, budget reset."""
        return self.store.requeue(tenant or self.tenant, run_id)

    def list_runs(
        self, *, status: RunStatus | None = None, limit: int = 100, tenant: str | None = None
    ) -> list[RunRecord]:
        return self.store.list_runs(tenant or self.tenant, status=status, limit=limit)
