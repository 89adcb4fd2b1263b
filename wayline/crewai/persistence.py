"""``WaylineFlowPersistence``: CrewAI Flow state on wayline's store, through CrewAI's own
seam (``crewai.flow.persistence.FlowPersistence``).

A flow (its state ``id``) is a wayline run of the tenant: each ``save_state`` CrewAI makes
when a method completes is the run's next step (the method's name and the state after it),
committed under the run's fencing token. The first save (or ``kickoff_on_wayline``) claims
the run's lease, a background thread keeps it, and a process that lost it cannot save
again (``LeaseLost``). Everything the store gives a run applies: tenant in every key, the
byte meter, purge and export, encryption at rest.

Resume. CrewAI's documented ``@persist`` resume (``kickoff(inputs={"id": ...})``) loads the
state and runs the Flow again from its first method. ``kickoff_on_wayline(flow, id)``
resumes without re-running completed methods: it hands the methods the store recorded as
completed to CrewAI's own restore path (the one its Checkpointing uses), so each completed
method is skipped and its listeners continue.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from crewai.flow.async_feedback.types import HumanFeedbackPending, PendingFeedbackContext
from crewai.flow.persistence.base import FlowPersistence
from pydantic import BaseModel, PrivateAttr

from wayline.codec import default_codec
from wayline.crewai.feedback import answered_feedback, feedback_interrupt
from wayline.errors import LeaseLost, VersionMismatchError, WaylineError
from wayline.ids import derive_id
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.records import AuditRecord, CommitBatch, DeltaRecord, InterruptRecord, RunUpdate

__all__ = ["CREWAI_GRAPH", "WaylineFlowPersistence", "flow_identity", "kickoff_on_wayline"]

CREWAI_GRAPH = ("crewai-flow", "")
"""(graph name, version) of a run a flow's first ``save_state`` creates: CrewAI's seam does
not say which flow saves. A queued run (``enqueue_flow``) names its flow instead."""

INBOX_KEY = "crewai_inputs"


def flow_identity(flow: Any) -> tuple[str, str]:
    """(name, fingerprint) of a flow: a run continues only on the flow that wrote it. The
    fingerprint covers each method's name and what triggers it (start, listen, router)."""
    methods = {
        name: method.model_dump(exclude={"do"}, exclude_none=True, mode="json")
        for name, method in flow._definition.methods.items()
    }
    shape = json.dumps(methods, sort_keys=True, separators=(",", ":"))
    return str(flow._definition.name), "cf-" + derive_id(shape)[:16]


class _Held:
    """A run this process holds: its token and what the store recorded for it."""

    def __init__(self, token: int, incarnation: str, rows: list[dict[str, Any]], inbox: bool):
        self.token = token
        self.incarnation = incarnation
        self.steps = len(rows)
        """Rows committed: the next row's step (a pause for feedback is a row too)."""
        self.methods = [str(r["method"]) for r in rows if "pending" not in r]
        self.pending = bool(rows) and "pending" in rows[-1]
        """The last row paused for human feedback: its interrupt is still to clear."""
        self.inbox = inbox
        """A queued run's inputs are still in its inbox: the first commit takes them."""
        self.lost = False


class WaylineFlowPersistence(FlowPersistence):
    """``@persist(WaylineFlowPersistence("sqlite:///runs.db"))``, or as the default of every
    flow: ``set_flow_persistence_factory(lambda: persistence)``."""

    persistence_type: str = "wayline"
    url: str = ""
    tenant: str = "default"
    lease_seconds: float = 30.0
    approvers: tuple[str, ...] | None = None
    """Who may answer a flow's ``@human_feedback`` pause (actor ids or roles); None: anyone
    of the tenant."""
    steal: bool = False
    """Take a flow's lease even while its holder's lease is live (you know it is dead)."""

    _store: Store | None = PrivateAttr(default=None)
    _owner: str = PrivateAttr(default="")
    _held: dict[str, _Held] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _beat: threading.Thread | None = PrivateAttr(default=None)
    _stop: threading.Event = PrivateAttr(default_factory=threading.Event)

    def __init__(self, url: str | Store = "", /, **data: Any) -> None:
        store = url if not isinstance(url, str) else None
        data["url"] = url if isinstance(url, str) else url.url
        super().__init__(**data)
        self._store = store
        self._owner = f"{socket.gethostname()}:{os.getpid()}:crewai:{id(self):x}"
        self.init_db()

    @property
    def owner(self) -> str:
        """Who holds the leases this persistence claims (host, process, instance)."""
        return self._owner

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.url)
        return self._store

    def init_db(self) -> None:
        """Open (and, for a new database, create) the store."""
        _ = self.store

    # -- CrewAI's seam --------------------------------------------------------------------

    def save_state(
        self, flow_uuid: str, method_name: str, state_data: dict[str, Any] | BaseModel
    ) -> None:
        held = self.hold(flow_uuid)
        self._commit(flow_uuid, held, {"method": method_name, "state": _plain_state(state_data)})
        held.methods.append(method_name)

    def save_pending_feedback(
        self,
        flow_uuid: str,
        context: PendingFeedbackContext,
        state_data: dict[str, Any] | BaseModel,
    ) -> None:
        """A ``@human_feedback`` pause: the state and CrewAI's context are the run's next
        row, and the question is an interrupt of the run (an approval when ``approvers`` is
        set), answered through ``Wayline.resume`` like any other; no process holds the run
        while it waits."""
        held = self.hold(flow_uuid)
        pending = context.to_dict()
        row = {"method": context.method_name, "state": _plain_state(state_data), "pending": pending}
        interrupt, audit = feedback_interrupt(
            self.tenant, flow_uuid, held.incarnation, held.steps, pending, self.approvers
        )
        self._commit(flow_uuid, held, row, interrupts=[interrupt], audit=[audit])

    def load_pending_feedback(
        self, flow_uuid: str
    ) -> tuple[dict[str, Any], PendingFeedbackContext] | None:
        row = self._last_row(flow_uuid)
        if row is None or "pending" not in row:
            return None
        return dict(row["state"]), PendingFeedbackContext.from_dict(row["pending"])

    def clear_pending_feedback(self, flow_uuid: str) -> None:
        """Nothing to do: the save of the answered method cleared the interrupt."""

    def _commit(
        self,
        flow_uuid: str,
        held: _Held,
        row: dict[str, Any],
        *,
        interrupts: Sequence[InterruptRecord] = (),
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        if held.lost:
            raise LeaseLost(flow_uuid, held.token, "another process holds this flow now")
        step, method = held.steps, str(row["method"])
        pausing = bool(interrupts)
        batch = CommitBatch(
            deltas=[DeltaRecord(step, default_codec.dumps(row), channels=((method, 0),))],
            interrupts=list(interrupts),
            audit=list(audit),
            clear_pending_through=step if held.pending else None,
            run=RunUpdate(
                status="interrupted" if pausing else "running", step=step, next_nodes=(method,)
            ),
            take_inbox=held.inbox,
        )
        try:
            self.store.commit(self.tenant, flow_uuid, held.token, batch)
        except LeaseLost:
            held.lost = True
            raise
        held.steps += 1
        held.pending = pausing
        held.inbox = False

    def load_state(self, flow_uuid: str) -> dict[str, Any] | None:
        row = self._last_row(flow_uuid)
        state = row["state"] if row is not None else None
        return dict(state) if isinstance(state, dict) else None

    def _rows(self, flow_uuid: str, *, last: bool = False) -> list[dict[str, Any]]:
        rec = self.store.get_run(self.tenant, flow_uuid)
        if rec is None or rec.step < 0:
            return []
        since = rec.step - 1 if last else -1
        rows = self.store.load_deltas(self.tenant, flow_uuid, since, rec.step)
        return [dict(default_codec.loads(r.payload)) for r in rows]

    def _last_row(self, flow_uuid: str) -> dict[str, Any] | None:
        rows = self._rows(flow_uuid, last=True)
        return rows[-1] if rows else None

    # -- runs -------------------------------------------------------------------------------

    def completed_methods(self, flow_uuid: str) -> list[str]:
        """The methods the store recorded as completed for this flow, in order."""
        return [str(r["method"]) for r in self._rows(flow_uuid) if "pending" not in r]

    def hold(self, flow_uuid: str, *, token: int | None = None) -> _Held:
        """This process's lease on the flow's run (claimed on first use, then kept);
        ``token``: a lease a worker already claimed (``claim_next``)."""
        with self._lock:
            held = self._held.get(flow_uuid)
            if held is not None:
                return held
            store = self.store
            rec = store.get_run(self.tenant, flow_uuid)
            if rec is None:
                rec = store.create_run(
                    self.tenant,
                    flow_uuid,
                    graph_name=CREWAI_GRAPH[0],
                    graph_version=CREWAI_GRAPH[1],
                    durability="sync",
                )
            if token is None:
                token = store.claim(
                    self.tenant,
                    flow_uuid,
                    owner=self._owner,
                    lease_seconds=self.lease_seconds,
                    steal=self.steal,
                )
            inbox = rec.inbox is not None
            held = _Held(token, rec.incarnation, self._rows(flow_uuid), inbox)
            self._held[flow_uuid] = held
            if self._beat is None:
                self._beat = threading.Thread(target=self._heartbeats, daemon=True)
                self._beat.start()
            return held

    def finish(self, flow_uuid: str, *, status: str = "done", error: str | None = None) -> None:
        """The flow ended (``done``, ``failed``) or paused for feedback (``interrupted``,
        recorded by its pause): record it and give its lease up."""
        with self._lock:
            held = self._held.pop(flow_uuid, None)
        if held is None or held.lost:
            return
        step = held.steps - 1
        if status == "done":
            batch = CommitBatch(
                run=RunUpdate(status="done", step=step, next_nodes=()), take_inbox=held.inbox
            )
            self.store.commit(self.tenant, flow_uuid, held.token, batch)
        elif status == "failed" and error is not None:
            with contextlib.suppress(LeaseLost):
                self.store.note_error(
                    self.tenant, flow_uuid, token=held.token, error=error, status="failed"
                )
        self.store.release(self.tenant, flow_uuid, held.token)

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            with self._lock:
                items = list(self._held.items())
            for flow_uuid, held in items:
                if held.lost:
                    continue
                with contextlib.suppress(Exception):
                    alive, _ = self.store.heartbeat(
                        self.tenant,
                        flow_uuid,
                        token=held.token,
                        owner=self._owner,
                        lease_seconds=self.lease_seconds,
                    )
                    held.lost = not alive

    def close(self) -> None:
        self._stop.set()
        if self._store is not None and isinstance(self.url, str) and self.url:
            self._store.close()
            self._store = None


def _plain_state(state_data: dict[str, Any] | BaseModel) -> dict[str, Any]:
    if isinstance(state_data, BaseModel):
        data: Any = state_data.model_dump(mode="json")
    else:
        data = state_data
    try:
        default_codec.dumps(data)
    except Exception:
        data = json.loads(json.dumps(data, default=str))
    return dict(data)


def kickoff_on_wayline(
    flow: Any,
    flow_id: str,
    inputs: dict[str, Any] | None = None,
    *,
    persistence: WaylineFlowPersistence | None = None,
) -> Any:
    """Start the flow ``flow_id``, or continue it without re-running the methods the store
    recorded as completed (CrewAI's ``kickoff(inputs={"id": ...})`` would run them again),
    or continue a flow paused for ``@human_feedback`` with the decision recorded on its run.
    Returns what ``flow.kickoff`` returns; the run is ``done`` (or ``failed``) after, or
    ``interrupted`` when it returns ``HumanFeedbackPending`` (also what a call returns
    while the pause is not decided yet, without running anything)."""
    p = persistence or flow.persistence
    if not isinstance(p, WaylineFlowPersistence):
        raise WaylineError(
            "kickoff_on_wayline needs the flow's WaylineFlowPersistence: decorate the flow "
            "with @persist(WaylineFlowPersistence(url)) or pass persistence=..."
        )
    flow.persistence = p
    _check_identity(p, flow, flow_id)
    rec = p.store.get_run(p.tenant, flow_id)
    feedback = answered_feedback(p.store, p.tenant, flow_id)
    if rec is not None and rec.status == "interrupted" and feedback is None:
        loaded = p.load_pending_feedback(flow_id)  # still waiting: nothing to run
        if loaded is not None:
            return HumanFeedbackPending(context=loaded[1])
    held = p.hold(flow_id)
    try:
        if feedback is not None and held.pending:
            result = type(flow).from_pending(flow_id, p).resume(feedback)
        else:
            if inputs is None and held.inbox:
                inputs = _queued_inputs(p, flow_id)
            if held.methods:
                flow.checkpoint_completed_methods = set(held.methods)
                flow.checkpoint_method_counts = dict(Counter(held.methods))
                flow._restore_from_checkpoint()
            result = flow.kickoff(inputs={**(inputs or {}), "id": flow_id})
    except BaseException as exc:
        if not isinstance(exc, LeaseLost):
            p.finish(flow_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    p.finish(flow_id, status="interrupted" if isinstance(result, HumanFeedbackPending) else "done")
    return result


def _check_identity(p: WaylineFlowPersistence, flow: Any, flow_id: str) -> None:
    rec = p.store.get_run(p.tenant, flow_id)
    if rec is None or (rec.graph_name, rec.graph_version) == CREWAI_GRAPH:
        return
    name, version = flow_identity(flow)
    if (rec.graph_name, rec.graph_version) != (name, version):
        raise VersionMismatchError(
            f"flow run {flow_id!r} was written by flow {rec.graph_name!r} version "
            f"{rec.graph_version}; this is {name!r} version {version}: continue it with the "
            "flow that started it"
        )


def _queued_inputs(p: WaylineFlowPersistence, flow_id: str) -> dict[str, Any] | None:
    rec = p.store.get_run(p.tenant, flow_id)
    if rec is None or rec.inbox is None:
        return None
    body = default_codec.loads(rec.inbox)  # a decision's inbox (Wayline.resume) has none
    inputs = body.get(INBOX_KEY) if isinstance(body, dict) else None
    return dict(inputs) if isinstance(inputs, dict) else None
