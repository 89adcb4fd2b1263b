"""CrewAI flows on wayline workers: ``enqueue_flow`` queues a flow run, ``CrewAIWorker``
claims queued runs with wayline's claim query (leases, fencing tokens, a dead holder's runs
claimable once its lease expires) and runs each with ``kickoff_on_wayline``, so a run taken
over from a killed worker skips the methods the store recorded as completed."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from crewai.flow.async_feedback.types import HumanFeedbackPending

from wayline.codec import default_codec
from wayline.crewai.persistence import (
    INBOX_KEY,
    WaylineFlowPersistence,
    flow_identity,
    kickoff_on_wayline,
)
from wayline.errors import ConfigError, LeaseLost
from wayline.store.records import RunRecord

__all__ = ["CrewAIWorker", "FlowOutcome", "enqueue_flow"]

log = logging.getLogger("wayline.crewai")

FlowFactory = Callable[..., Any]
"""A ``Flow`` subclass (or any callable taking ``persistence=`` and returning a flow)."""


@dataclasses.dataclass(frozen=True, slots=True)
class FlowOutcome:
    """Where a worker left a run: ``done`` with what ``kickoff`` returned, ``interrupted``
    (paused for ``@human_feedback``: ``result`` is CrewAI's ``HumanFeedbackPending``; a
    decision puts it back in the queue), or ``failed`` with the error."""

    run_id: str
    status: str
    result: Any = None
    error: str | None = None


def _prototype(factory: FlowFactory, persistence: WaylineFlowPersistence) -> Any:
    flow = factory(persistence=persistence)
    definition = getattr(flow, "_definition", None)
    persist = getattr(definition, "persist", None)
    if persist is None or not persist.enabled:
        raise ConfigError(
            f"flow {type(flow).__name__!r} does not persist its state, so a worker could not "
            "resume it: decorate the class with @persist(WaylineFlowPersistence(url)) (the "
            "worker's own persistence replaces the backend)"
        )
    return flow


def enqueue_flow(
    persistence: WaylineFlowPersistence,
    factory: FlowFactory,
    flow_id: str,
    inputs: dict[str, Any] | None = None,
) -> RunRecord:
    """Queue the flow ``flow_id`` with its ``kickoff`` inputs for a ``CrewAIWorker``."""
    name, version = flow_identity(_prototype(factory, persistence))
    inbox = default_codec.dumps({INBOX_KEY: dict(inputs or {})})
    return persistence.store.enqueue(
        persistence.tenant,
        flow_id,
        inbox,
        graph_name=name,
        graph_version=version,
        durability="sync",
        engine="crewai",
    )


class CrewAIWorker:
    """Serves the given flows; each run continues only on the flow (name and fingerprint)
    that was queued for it."""

    def __init__(
        self,
        persistence: WaylineFlowPersistence,
        flows: Sequence[FlowFactory],
        *,
        poll_interval: float = 1.0,
    ) -> None:
        self.persistence = persistence
        self.flows = {flow_identity(_prototype(f, persistence)): f for f in flows}
        self.poll_interval = poll_interval
        self.completed: list[FlowOutcome] = []

    def run_once(self) -> FlowOutcome | None:
        """Claim one runnable flow run and run it to its end; None when there is nothing
        to claim (or this worker lost the run's lease while running it)."""
        p = self.persistence
        claimed = p.store.claim_next(
            owner=p.owner,
            lease_seconds=p.lease_seconds,
            graphs=[(name, version, "") for name, version in self.flows],
            tenant_id=p.tenant,
        )
        if claimed is None:
            return None
        run, token = claimed
        flow = self.flows[(run.graph_name, run.graph_version)](persistence=p)
        p.hold(run.run_id, token=token)
        try:
            result = kickoff_on_wayline(flow, run.run_id, persistence=p)
        except LeaseLost as exc:
            log.warning("%s", exc)
            return None
        except Exception as exc:
            outcome = FlowOutcome(run.run_id, "failed", error=f"{type(exc).__name__}: {exc}")
        else:
            paused = isinstance(result, HumanFeedbackPending)
            outcome = FlowOutcome(run.run_id, "interrupted" if paused else "done", result=result)
        self.completed.append(outcome)
        return outcome

    def run(self, *, max_runs: int | None = None) -> None:
        """Claim and run until ``max_runs`` runs ended or paused (None: forever)."""
        done = 0
        while max_runs is None or done < max_runs:
            if self.run_once() is None:
                self.persistence.store.wait_for_work(self.poll_interval)
            else:
                done += 1
