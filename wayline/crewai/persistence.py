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
from typing import Any

from crewai.flow.persistence.base import FlowPersistence
from pydantic import BaseModel, PrivateAttr

from wayline.codec import default_codec
from wayline.errors import LeaseLost, VersionMismatchError, WaylineError
from wayline.ids import derive_id
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.records import CommitBatch, DeltaRecord, RunUpdate

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

    def __init__(self, token: int, incarnation: str, methods: list[str], inbox: bool) -> None:
        self.token = token
        self.incarnation = incarnation
        self.methods = methods
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
        if held.lost:
            raise LeaseLost(flow_uuid, held.token, "another process holds this flow now")
        state = _plain_state(state_data)
        step = len(held.methods)
        payload = default_codec.dumps({"method": method_name, "state": state})
        batch = CommitBatch(
            deltas=[DeltaRecord(step=step, payload=payload, channels=((method_name, 0),))],
            run=RunUpdate(status="running", step=step, next_nodes=(method_name,)),
            take_inbox=held.inbox,
        )
        try:
            self.store.commit(self.tenant, flow_uuid, held.token, batch)
        except LeaseLost:
            held.lost = True
            raise
        held.methods.append(method_name)
        held.inbox = False

    def load_state(self, flow_uuid: str) -> dict[str, Any] | None:
        rec = self.store.get_run(self.tenant, flow_uuid)
        if rec is None or rec.step < 0:
            return None
        rows = self.store.load_deltas(self.tenant, flow_uuid, rec.step - 1, rec.step)
        if not rows:
            return None
        state = default_codec.loads(rows[-1].payload)["state"]
        return dict(state) if isinstance(state, dict) else None

    # -- runs -------------------------------------------------------------------------------

    def completed_methods(self, flow_uuid: str) -> list[str]:
        """The methods the store recorded as completed for this flow, in order."""
        rec = self.store.get_run(self.tenant, flow_uuid)
        if rec is None or rec.step < 0:
            return []
        rows = self.store.load_deltas(self.tenant, flow_uuid, -1, rec.step)
        return [str(default_codec.loads(r.payload)["method"]) for r in rows]

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
            held = _Held(token, rec.incarnation, self.completed_methods(flow_uuid), inbox)
            self._held[flow_uuid] = held
            if self._beat is None:
                self._beat = threading.Thread(target=self._heartbeats, daemon=True)
                self._beat.start()
            return held

    def finish(self, flow_uuid: str, *, status: str = "done", error: str | None = None) -> None:
        """The flow ended: record it and give its lease up."""
        with self._lock:
            held = self._held.pop(flow_uuid, None)
        if held is None or held.lost:
            return
        step = len(held.methods) - 1
        if status == "done":
            batch = CommitBatch(
                run=RunUpdate(status="done", step=step, next_nodes=()), take_inbox=held.inbox
            )
            self.store.commit(self.tenant, flow_uuid, held.token, batch)
        elif error is not None:
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
    recorded as completed (CrewAI's ``kickoff(inputs={"id": ...})`` would run them again).
    Returns what ``flow.kickoff`` returns; the run is ``done`` (or ``failed``) after."""
    p = persistence or flow.persistence
    if not isinstance(p, WaylineFlowPersistence):
        raise WaylineError(
            "kickoff_on_wayline needs the flow's WaylineFlowPersistence: decorate the flow "
            "with @persist(WaylineFlowPersistence(url)) or pass persistence=..."
        )
    flow.persistence = p
    _check_identity(p, flow, flow_id)
    held = p.hold(flow_id)
    if inputs is None and held.inbox:
        inputs = _queued_inputs(p, flow_id)
    if held.methods:
        flow.checkpoint_completed_methods = set(held.methods)
        flow.checkpoint_method_counts = dict(Counter(held.methods))
        flow._restore_from_checkpoint()
    try:
        result = flow.kickoff(inputs={**(inputs or {}), "id": flow_id})
    except BaseException as exc:
        if not isinstance(exc, LeaseLost):
            p.finish(flow_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    p.finish(flow_id)
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
    inputs = default_codec.loads(rec.inbox).get(INBOX_KEY)
    return dict(inputs) if isinstance(inputs, dict) else None
