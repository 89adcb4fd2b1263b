"""``WaylineRuntime``: LlamaIndex Workflows on wayline's store, through LlamaIndex's own
``Runtime`` seam (``workflows.runtime.types.plugin``).

It is LlamaIndex's asyncio runtime (``BasicRuntime``) with a durable internal adapter:

- ``on_tick`` commits every tick the control loop processes as the next step of the
  wayline run, fenced by the run's token, before the loop acts on it (``journal``). A
  step's completion and the events it emitted are durable before the next step starts.
- ``get_now`` is the durable clock: never below the newest stamp in the journal, so a run
  resumed on a machine whose clock is behind never sees time go backwards (ticks carry
  their stamps, and replay reads those, not the clock).
- When the run goes idle with a step waiting for an event (``ctx.wait_for_event``, human
  input), the adapter releases it: the waiter is recorded as an interrupt (with who may
  answer it), the run is ``interrupted`` and no worker holds it. ``Wayline.resume``
  (wayline's approvals: actor, policy, digest, audit) answers it; the next ``run`` (any
  process, any worker) folds the journal and delivers the decision as the awaited event.

``run(workflow, run_id, ...)`` starts or continues a run: it claims the run's lease (a
fencing token; heartbeats keep it), folds what the journal holds, and runs to the end or to
the next wait. A worker that lost its lease cannot commit a tick or an effect
(``LeaseLost``) and stops the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import socket
import time
from collections.abc import Sequence
from typing import Any, Literal

from workflows.context.serializers import BaseSerializer
from workflows.context.state_store import InMemoryStateStore
from workflows.events import (
    Event,
    HumanResponseEvent,
    IdleReleasedEvent,
    StartEvent,
    StopEvent,
    WorkflowIdleEvent,
)
from workflows.plugins.basic import (
    AsyncioAdapterQueues,
    BasicRuntime,
    InternalAsyncioAdapter,
    get_current_run_id,
)
from workflows.runtime.types.plugin import InternalRunAdapter
from workflows.runtime.types.results import AddWaiter
from workflows.runtime.types.ticks import (
    TickAddEvent,
    TickIdleRelease,
    TickStepResult,
    WorkflowTick,
)
from workflows.workflow import Workflow

from wayline.codec import default_codec
from wayline.errors import (
    LeaseLost,
    ResumeError,
    RunParkedError,
    VersionMismatchError,
)
from wayline.ids import derive_id
from wayline.llamaindex.journal import Journal, check_serializer, encode_tick, fold, load_journal
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.records import (
    AuditRecord,
    CommitBatch,
    DeltaRecord,
    InterruptRecord,
    RunRecord,
    RunUpdate,
)

__all__ = ["LlamaRun", "WaylineRuntime", "workflow_identity"]

DEFAULT_TENANT = "default"
_INBOX_KEY = "llamaindex_start"


def workflow_identity(workflow: Workflow) -> tuple[str, str]:
    """(name, fingerprint): a worker continues only runs of the workflow that wrote them.
    The fingerprint covers the steps and the events each accepts and returns."""
    parts = []
    for name, fn in sorted(workflow._get_steps().items()):
        cfg = getattr(fn, "_step_config", None)
        accepted = sorted(map(_type_name, getattr(cfg, "accepted_events", []) or []))
        returned = sorted(map(_type_name, getattr(cfg, "return_types", []) or []))
        parts.append(f"{name}:{','.join(accepted)}->{','.join(returned)}")
    return workflow.workflow_name, "li-" + derive_id(*parts)[:16]


def _type_name(t: Any) -> str:
    return f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', repr(t))}"


@dataclasses.dataclass(frozen=True, slots=True)
class LlamaRun:
    """How a ``run`` call ended: ``done`` (``result`` is the StopEvent's result) or
    ``interrupted`` (``waiting``: the open questions, as ``Wayline.pending`` shows them)."""

    run_id: str
    status: Literal["done", "interrupted"]
    result: Any = None
    waiting: tuple[dict[str, Any], ...] = ()


@dataclasses.dataclass
class _Binding:
    """One run held by this process: where its ticks go and under which token."""

    store: Store
    tenant: str
    run_id: str
    token: int
    incarnation: str
    serializer: BaseSerializer
    journal: Journal
    take_inbox: bool = False
    clear_through: int | None = None
    last_state: str | None = None
    inject: list[tuple[Event, str]] = dataclasses.field(default_factory=list)
    releasing: bool = False
    parked: str | None = None
    lost: bool = False

    def commit_tick(self, tick: WorkflowTick, state_store: Any) -> None:
        state = None
        if isinstance(tick, TickStepResult) and isinstance(state_store, InMemoryStateStore):
            data = state_store.to_dict(self.serializer)
            text = json.dumps(data, sort_keys=True, default=str)
            if text != self.last_state:
                state, self.last_state = data, text
        answered = None
        if isinstance(tick, TickAddEvent):
            for i, (event, interrupt_id) in enumerate(self.inject):
                if event is tick.event or event == tick.event:
                    answered = interrupt_id
                    del self.inject[i]
                    break
        step = self.journal.seq
        batch = CommitBatch(
            deltas=[encode_tick(self.serializer, tick, step, state, answered)],
            run=RunUpdate(status="running", step=step, next_nodes=()),
            take_inbox=self.take_inbox,
            clear_pending_through=self.clear_through,
        )
        try:
            self.store.commit(self.tenant, self.run_id, self.token, batch)
        except LeaseLost:
            self.lost = True
            raise
        self.take_inbox = False
        self.clear_through = None
        self.journal.note(tick)


class WaylineInternalAdapter(InternalAsyncioAdapter):
    """The control loop's side of a run: every tick durable before it is acted on."""

    def __init__(self, queues: AsyncioAdapterQueues, binding: _Binding) -> None:
        super().__init__(queues)
        self.binding = binding

    async def on_tick(self, tick: WorkflowTick) -> None:
        if isinstance(tick, TickIdleRelease):
            return  # changes no state: the release is recorded as the run's interrupt
        self.binding.commit_tick(tick, self._queues.state_store)

    def replay(self) -> list[WorkflowTick]:
        return list(self.binding.journal.ticks)

    async def get_now(self) -> float:
        return max(time.time(), self.binding.journal.last_stamp)

    async def write_to_event_stream(self, event: Event) -> None:
        waiting = self.binding.journal.waiters
        if isinstance(event, WorkflowIdleEvent) and waiting and not self.binding.releasing:
            self.binding.releasing = True
            await self.send_event(TickIdleRelease())
        await super().write_to_event_stream(event)


class WaylineRuntime(BasicRuntime):
    """A LlamaIndex ``Runtime`` whose runs live in a wayline store.

    ``WaylineRuntime("sqlite:///runs.db")`` (or ``postgresql://...``, or an open store);
    ``MyWorkflow(runtime=rt)``; then ``await rt.run(wf, "order-7", start_event=...)``
    starts the run or continues it from its journal, in this process or any other.
    """

    def __init__(
        self,
        store: Store | str,
        *,
        tenant: str = DEFAULT_TENANT,
        owner: str | None = None,
        lease_seconds: float = 30.0,
        approvers: Sequence[str] | None = None,
        approval_ttl: float | None = None,
        answer_events: Sequence[type[Event]] = (),
    ) -> None:
        super().__init__()
        self._owns_store = isinstance(store, str)
        self.store: Store = open_store(store) if isinstance(store, str) else store
        self.tenant = tenant
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.lease_seconds = lease_seconds
        self.approvers = tuple(approvers) if approvers is not None else None
        """Who may answer a wait (actor ids or roles); None: anyone of the tenant."""
        self.approval_ttl = approval_ttl
        self.answer_events = tuple(answer_events)
        """Event types a step waits for that the workflow's steps do not declare."""
        self._bindings: dict[str, _Binding] = {}

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    # -- the seam -------------------------------------------------------------------------

    def get_internal_adapter(self, workflow: Workflow) -> InternalRunAdapter:
        run_id = get_current_run_id()
        binding = self._bindings.get(run_id or "")
        if run_id is None or binding is None:
            raise ResumeError(
                f"run {run_id!r} was started with workflow.run() on a WaylineRuntime: start "
                "it with `await runtime.run(workflow, run_id, ...)`, which claims its lease"
            )
        return WaylineInternalAdapter(self._queues[run_id], binding)

    # -- runs ------------------------------------------------------------------------------

    def enqueue(
        self, workflow: Workflow, run_id: str, start_event: StartEvent | None = None, **kw: Any
    ) -> RunRecord:
        """Queue a run for a worker (``LlamaIndexWorker``) to claim."""
        name, version = workflow_identity(workflow)
        event = workflow._get_start_event_instance(start_event, **kw)
        serializer = self.get_serializer(workflow)
        check_serializer(serializer, run_id)
        inbox = default_codec.dumps({_INBOX_KEY: serializer.serialize(event)})
        return self.store.enqueue(
            self.tenant, run_id, inbox, graph_name=name, graph_version=version, durability="sync"
        )

    async def run(
        self,
        workflow: Workflow,
        run_id: str,
        start_event: StartEvent | None = None,
        *,
        token: int | None = None,
        steal: bool = False,
        **kwargs: Any,
    ) -> LlamaRun:
        """Start the run, or continue it from its journal; returns at its end or its next
        wait. ``token``: a lease already claimed (a worker's ``claim_next``); ``steal``: take
        the lease even if its holder's has not expired (you know that process is dead: the
        old holder's token goes stale, so it can no longer write)."""
        serializer = self.get_serializer(workflow)
        check_serializer(serializer, run_id)
        name, version = workflow_identity(workflow)
        rec = self.store.get_run(self.tenant, run_id)
        if rec is None:
            rec = self.store.create_run(
                self.tenant, run_id, graph_name=name, graph_version=version, durability="sync"
            )
        if (rec.graph_name, rec.graph_version) != (name, version):
            raise VersionMismatchError(
                f"run {run_id!r} was written by workflow {rec.graph_name!r} version "
                f"{rec.graph_version}; this is {name!r} version {version}: run it with the "
                "workflow that started it"
            )
        if rec.status == "done":
            return self._finished(rec, serializer)
        answers = self._answers(rec)
        if rec.status == "interrupted" and not answers and token is None:
            return LlamaRun(run_id, "interrupted", waiting=self._open(rec))
        if token is None:
            token = self.store.claim(
                self.tenant,
                run_id,
                owner=self.owner,
                lease_seconds=self.lease_seconds,
                steal=steal,
            )
        try:
            return await self._run_held(workflow, rec, token, serializer, start_event, kwargs)
        finally:
            self._bindings.pop(run_id, None)
            self._queues.pop(run_id, None)
            with contextlib.suppress(Exception):
                self.store.release(self.tenant, run_id, token)

    async def _run_held(
        self,
        workflow: Workflow,
        rec: RunRecord,
        token: int,
        serializer: BaseSerializer,
        start_event: StartEvent | None,
        kwargs: dict[str, Any],
    ) -> LlamaRun:
        run_id = rec.run_id
        rec = self.store.get_run(self.tenant, run_id) or rec  # as claimed (inbox, step)
        journal = load_journal(self.store, serializer, self.tenant, run_id, rec.step)
        binding = _Binding(
            self.store, self.tenant, run_id, token, rec.incarnation, serializer, journal
        )
        binding.take_inbox = rec.inbox is not None
        self._bindings[run_id] = binding
        answers = [a for a in self._answers(rec) if a[0].interrupt_id not in journal.answered]
        if answers:
            binding.clear_through = rec.step + 1
        if journal.seq == 0:
            start = start_event or self._inbox_start(rec, serializer)
            handler = workflow.run(start_event=start, run_id=run_id, **kwargs)
        else:
            ctx = fold(workflow, journal, serializer, run_id)
            handler = workflow.run(ctx=ctx, run_id=run_id)
        for interrupt, decision in answers:
            event = self._answer_event(workflow, rec, interrupt, decision)
            binding.inject.append((event, interrupt.interrupt_id))
            handler.ctx.send_event(event)
        beat = asyncio.create_task(self._heartbeat(binding, handler))
        try:
            result = await handler
        except BaseException as exc:
            if binding.lost or isinstance(exc, LeaseLost):
                raise LeaseLost(run_id, token, "this LlamaIndex run stopped") from None
            self._fail(binding, exc)
            raise
        finally:
            beat.cancel()
        if binding.lost:
            raise LeaseLost(run_id, token, "this LlamaIndex run stopped")
        if isinstance(result, IdleReleasedEvent):
            return self._suspend(binding)
        return self._finish(binding, handler, result)

    async def _heartbeat(self, binding: _Binding, handler: Any) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            held, _cancel = self.store.heartbeat(
                self.tenant,
                binding.run_id,
                token=binding.token,
                owner=self.owner,
                lease_seconds=self.lease_seconds,
            )
            if not held:
                binding.lost = True
                handler.cancel()
                return

    # -- outcomes ----------------------------------------------------------------------------

    def _finish(self, binding: _Binding, handler: Any, result: Any) -> LlamaRun:
        step = binding.journal.seq
        value = result
        payload = default_codec.dumps({"tick": None, "result": _plain(value)})
        batch = CommitBatch(
            deltas=[DeltaRecord(step=step, payload=payload)],
            run=RunUpdate(
                status="done",
                step=step,
                next_nodes=(),
                state_digest=hashlib.sha256(payload).hexdigest(),
            ),
            take_inbox=binding.take_inbox,
        )
        self.store.commit(self.tenant, binding.run_id, binding.token, batch)
        return LlamaRun(binding.run_id, "done", result=value)

    def _finished(self, rec: RunRecord, serializer: BaseSerializer) -> LlamaRun:
        rows = self.store.load_deltas(self.tenant, rec.run_id, rec.step - 1, rec.step)
        body = default_codec.loads(rows[-1].payload) if rows else {}
        return LlamaRun(rec.run_id, "done", result=body.get("result"))

    def _suspend(self, binding: _Binding) -> LlamaRun:
        """Record each open waiter as an interrupt; no worker holds the run after this."""
        step = binding.journal.seq - 1
        records: list[InterruptRecord] = []
        audit: list[AuditRecord] = []
        waiting: list[dict[str, Any]] = []
        expires = time.time() + self.approval_ttl if self.approval_ttl else None
        for waiter_id, (step_name, waiter) in sorted(binding.journal.waiters.items()):
            question = _question(step_name, waiter)
            value = default_codec.dumps(question)
            digest = hashlib.sha256(value).hexdigest()
            iid = derive_id(binding.incarnation, binding.run_id, waiter_id)
            records.append(
                InterruptRecord(
                    step=step + 1,
                    task_id=waiter_id,
                    idx=len(records),
                    interrupt_id=iid,
                    value=value,
                    digest=digest,
                    approvers=self.approvers,
                    expires_at=expires,
                )
            )
            who = "anyone" if self.approvers is None else ", ".join(self.approvers)
            audit.append(
                AuditRecord(
                    self.tenant,
                    binding.run_id,
                    actor=f"step:{question['step']}",
                    action="request",
                    outcome="pending",
                    digest=digest,
                    detail=f"approvers: {who}",
                )
            )
            waiting.append({**question, "interrupt_id": iid, "digest": digest})
        batch = CommitBatch(
            interrupts=records,
            audit=audit,
            run=RunUpdate(status="interrupted", step=step, next_nodes=()),
            take_inbox=binding.take_inbox,
        )
        self.store.commit(self.tenant, binding.run_id, binding.token, batch)
        return LlamaRun(binding.run_id, "interrupted", waiting=tuple(waiting))

    def _fail(self, binding: _Binding, exc: BaseException) -> None:
        parked = binding.parked or (exc.key if isinstance(exc, RunParkedError) else None)
        status: Literal["parked", "failed"] = "parked" if parked else "failed"
        with contextlib.suppress(Exception):
            self.store.note_error(
                self.tenant,
                binding.run_id,
                token=binding.token,
                error=f"{type(exc).__name__}: {exc}",
                status=status,
            )

    def _answers(self, rec: RunRecord) -> list[tuple[InterruptRecord, Any]]:
        if rec.status not in ("interrupted", "pending"):
            return []
        return [
            (i, default_codec.loads(i.resume))
            for i in self.store.load_interrupts(self.tenant, rec.run_id, rec.step + 1)
            if i.resume is not None
        ]

    def _open(self, rec: RunRecord) -> tuple[dict[str, Any], ...]:
        return tuple(
            {**default_codec.loads(i.value), "interrupt_id": i.interrupt_id, "digest": i.digest}
            for i in self.store.load_interrupts(self.tenant, rec.run_id, rec.step + 1)
            if i.resume is None
        )

    def _inbox_start(self, rec: RunRecord, serializer: BaseSerializer) -> StartEvent | None:
        if rec.inbox is None:
            return None
        body = default_codec.loads(rec.inbox)
        if not isinstance(body, dict) or _INBOX_KEY not in body:
            return None
        with serializer.validation_context():
            event = serializer.deserialize(body[_INBOX_KEY])
        return event if isinstance(event, StartEvent) else None

    def _answer_event(
        self, workflow: Workflow, rec: RunRecord, interrupt: InterruptRecord, decision: Any
    ) -> Event:
        """The event a decision stands for: the waiter's event type, from the workflow's
        declared events, ``HumanResponseEvent`` or the runtime's ``answer_events`` (a
        stored name never imports a module)."""
        question = default_codec.loads(interrupt.value)
        wanted = question.get("event_type")
        known: list[type[Event]] = [*workflow.events, HumanResponseEvent, *self.answer_events]
        for cls in known:
            if _type_name(cls) == wanted:
                if isinstance(decision, dict):
                    return cls.model_validate(decision)
                return cls(response=decision)
        raise ResumeError(
            f"run {rec.run_id!r} waits for event {wanted!r}, which workflow "
            f"{workflow.workflow_name!r} does not declare: run it with the workflow that "
            "started it"
        )


def _question(step_name: str, waiter: AddWaiter[Any]) -> dict[str, Any]:
    prompt = waiter.waiter_event
    return {
        "step": step_name,
        "waiter_id": waiter.waiter_id,
        "event_type": _type_name(waiter.event_type),
        "prompt": None if prompt is None else _plain(prompt),
    }


def _plain(value: Any) -> Any:
    """A value as plain data wayline's codec stores (StopEvent results are usually plain)."""
    if isinstance(value, StopEvent):
        return _plain(value.result)
    if isinstance(value, Event):
        data = value.model_dump(mode="json")
        extra = data.pop("_data", None)  # an Event keeps undeclared fields in _data
        return {**data, **extra} if isinstance(extra, dict) else data
    try:
        default_codec.dumps(value)
    except Exception:
        return json.loads(json.dumps(value, default=str))
    return value
