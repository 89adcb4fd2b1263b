"""``LlamaIndexWorker``: claims queued LlamaIndex runs with wayline's claim query (leases,
fencing tokens, a dead holder's runs claimable once its lease expires) and runs each on a
``WaylineRuntime`` until it ends or waits."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from workflows.workflow import Workflow

from wayline.errors import LeaseLost
from wayline.llamaindex.runtime import LlamaRun, WaylineRuntime, workflow_identity

__all__ = ["LlamaIndexWorker"]

log = logging.getLogger("wayline.llamaindex")


class LlamaIndexWorker:
    """Serves the given workflows (each run continues on the workflow that wrote it)."""

    def __init__(
        self, runtime: WaylineRuntime, workflows: Sequence[Workflow], *, poll_interval: float = 1.0
    ) -> None:
        self.runtime = runtime
        self.workflows = {workflow_identity(w): w for w in workflows}
        self.poll_interval = poll_interval
        self.completed: list[LlamaRun] = []

    async def run_once(self) -> LlamaRun | None:
        """Claim one runnable run and run it; None when there is nothing to claim."""
        rt = self.runtime
        claimed = rt.store.claim_next(
            owner=rt.owner,
            lease_seconds=rt.lease_seconds,
            # the version is the workflow's own fingerprint (``workflow_identity``)
            graphs=[(name, version, "") for name, version in self.workflows],
            tenant_id=rt.tenant,
        )
        if claimed is None:
            return None
        run, token = claimed
        workflow = self.workflows[(run.graph_name, run.graph_version)]
        try:
            outcome = await rt.run(workflow, run.run_id, token=token)
        except LeaseLost as exc:
            log.warning("%s", exc)
            return None
        self.completed.append(outcome)
        return outcome

    async def run(self, *, max_runs: int | None = None) -> None:
        """Claim and run until ``max_runs`` runs ended or waited (None: forever)."""
        done = 0
        while max_runs is None or done < max_runs:
            try:
                outcome = await self.run_once()
            except Exception:
                log.exception("a LlamaIndex run failed")
                done += 1
                continue
            if outcome is None:
                await asyncio.to_thread(self.runtime.store.wait_for_work, self.poll_interval)
            else:
                done += 1
