"""The client: start runs for workers to execute, wait for them, resume, cancel, retry.

``start`` returns at once: the run's input goes into its inbox and any worker serving the
graph claims it (PostgreSQL wakes one with NOTIFY; SQLite workers poll). Nothing here
executes a node.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from wayline.codec import Codec, default_codec
from wayline.control.approvals import Actor, ApprovalPolicy, audit_refusal, decide, role_policy
from wayline.control.erasure import erase_subject, redact_run
from wayline.control.policy import DataPolicy, apply_policy
from wayline.control.retention import export_run, export_subject, purge_older_than
from wayline.control.scopes import Scope, check_scope, require
from wayline.control.versions import migrate_run
from wayline.effects.replay import Substitute
from wayline.errors import ConfigError, RunNotFoundError, TenantMismatchError
from wayline.graph.checkpoint import encode_inbox
from wayline.graph.compiled import CompiledGraph
from wayline.graph.loop import default_owner
from wayline.graph.travel import ForkOrigin, check_mode, create_fork, fork_id_for, load_origin
from wayline.graph.types import Interrupt
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.records import (
    SETTLED_STATUSES,
    TERMINAL_STATUSES,
    AuditRecord,
    RunRecord,
    RunStatus,
    check_durability,
)
from wayline.store.schedules import ScheduleRecord, schedules
from wayline.worker.engines import engine_for

__all__ = ["SETTLED", "Wayline"]

SETTLED = SETTLED_STATUSES
"""Statuses in which a run waits for nobody but a person (or is over)."""


class Wayline:
    """A handle on a store for starting and steering runs.

    ``Wayline("sqlite:///runs.db")`` or ``Wayline(store)``. ``Wayline(url, tenant="acme")``
    pins the client to that tenant: every call acts for it, and a call that names another
    (``tenant="globex"``) raises ``TenantMismatchError`` (a decision so refused is audited
    in the named run's log). Without ``tenant`` the client acts for ``"default"`` and, as
    an operator's tool, for whichever tenant a call names.
    """

    def __init__(
        self,
        store: Store | str,
        *,
        tenant: str | None = None,
        codec: Codec = default_codec,
        policy: ApprovalPolicy = role_policy,
        scope: Scope = "admin",
        operator: str = "operator",
    ) -> None:
        self.store = open_store(store) if isinstance(store, str) else store
        self.operator = operator
        """Who this client's operator actions (cancel, retry, purge) are audited as."""
        self.scope = check_scope(scope)
        """``read``: state, history, exports; ``execute``: also start, resume, approve,
        cancel, retry; ``admin``: also purge, erase, apply policies, migrate."""
        self.tenant = "default" if tenant is None else tenant
        self.pinned = tenant is not None
        """Pinned clients act for ``tenant`` only."""
        self.codec = codec
        self.policy = policy

    def start(
        self,
        graph: Any,
        input: Any,
        *,
        run_id: str | None = None,
        tenant: str | None = None,
        durability: str = "sync",
        subject: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
    ) -> str:
        """Queue a new run of ``graph``; returns its id. Starting an existing id again hands
        it a new input (as ``invoke`` on a finished thread would). ``subject``: the data
        subject the run's classified values are about (erasure and export by subject).
        ``interrupt_before`` / ``interrupt_after`` (node names or ``"*"``) travel with the
        input: the worker pauses there, the run waits ``interrupted``, and ``continue_run``
        takes it on. ``graph``: a wayline graph, or a LangGraph ``CompiledStateGraph`` or
        ``@entrypoint`` (run by LangGraph's engine on a worker: ``wayline.langgraph.engine``)."""
        require(self.scope, "execute", "start a run")
        engine = engine_for(graph)
        check_durability(durability)  # refused here, not by a worker after queueing
        if input is None:
            raise ConfigError(
                "start() needs an input: a run started with None has nothing to run; to "
                "continue an existing run use resume() or invoke(None, config)"
            )
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise ConfigError(  # "" would start a run under a random id the caller never sees
                f"run_id must be a non-empty string (or None for a new random id), not {run_id!r}"
            )
        run_id = run_id or uuid.uuid4().hex
        breakpoints = (interrupt_before, interrupt_after)
        self.store.enqueue(
            self._tenant(tenant),
            run_id,
            (
                encode_inbox(self.codec, input, breakpoints)
                if isinstance(graph, CompiledGraph)
                else engine.encode_input(input, breakpoints)
            ),
            graph_name=engine.name,
            graph_version=engine.version,
            durability=durability,
            schema_version=engine.schema_version,
            subject=subject or None,
            classes=engine.labels(),
            engine=engine.kind,
            fingerprint=engine.fingerprint,
            shape=engine.shape_json,
        )
        return run_id

    def schedule(
        self,
        graph: Any,
        input: Any,
        *,
        cron: str,
        timezone: str = "UTC",
        thread: str | None = None,
        schedule_id: str | None = None,
        tenant: str | None = None,
        durability: str = "sync",
        end_at: float | None = None,
    ) -> ScheduleRecord:
        """Start a run of ``graph`` with ``input`` at every tick of ``cron`` (five fields,
        read in ``timezone``): ``cron="0 9 * * 1-5"`` is 09:00 on weekdays. With ``thread``,
        each tick hands that run new input (one thread, many turns); without, each tick
        starts a run of its own (id ``<schedule_id>-<tick, UTC>``). Any worker serving the
        graph fires a tick, once however many serve it; a tick missed while no worker ran
        fires once when one next does (docs/wakeups.md). ``graph``: a wayline graph or a
        LangGraph one, as for ``start``; each tick's run carries its fingerprint, so only a
        worker serving that shape of the graph claims it. Returns the stored schedule."""
        require(self.scope, "execute", "schedule runs")
        check_durability(durability)
        book = schedules(self.store)
        if book is None:
            raise ConfigError(f"the store {self.store.url!r} keeps no schedules")
        engine = engine_for(graph)
        return book.create(
            self._tenant(tenant),
            schedule_id or uuid.uuid4().hex,
            graph_name=engine.name,
            graph_version=engine.version,
            schema_version=engine.schema_version,
            inbox=(
                encode_inbox(self.codec, input, (None, None))
                if isinstance(graph, CompiledGraph)
                else engine.encode_input(input)
            ),
            cron=cron,
            timezone=timezone,
            thread_id=thread,
            durability=durability,
            end_at=end_at,
            fingerprint=engine.fingerprint,
            shape=engine.shape_json,
            engine=engine.kind,
        )

    def schedules(self, *, tenant: str | None = None) -> list[ScheduleRecord]:
        """The tenant's schedules, oldest first."""
        book = schedules(self.store)
        return [] if book is None else book.search(self._tenant(tenant), limit=10_000)

    def pause_schedule(
        self, schedule_id: str, *, paused: bool = True, tenant: str | None = None
    ) -> ScheduleRecord:
        """Stop (``paused=False``: restart) firing a schedule; a restarted one fires at its
        first tick after now, not for the ticks it missed."""
        require(self.scope, "execute", "pause a schedule")
        book = schedules(self.store)
        found = (
            None
            if book is None
            else book.update(self._tenant(tenant), schedule_id, enabled=not paused)
        )
        if found is None:
            raise RunNotFoundError(f"no schedule {schedule_id!r}: see wayline crons list")
        return found

    def delete_schedule(self, schedule_id: str, *, tenant: str | None = None) -> bool:
        require(self.scope, "execute", "delete a schedule")
        book = schedules(self.store)
        return book is not None and book.delete(self._tenant(tenant), schedule_id)

    def continue_run(
        self,
        run_id: str,
        *,
        tenant: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
    ) -> None:
        """Queue a run paused at a breakpoint (or settled) to go on with no new input, as
        ``invoke(None, config)`` would, pausing at the breakpoints given (if any)."""
        require(self.scope, "execute", "continue a run")
        run = self.get(run_id, tenant=tenant)
        self.store.enqueue(
            run.tenant_id,
            run_id,
            encode_inbox(self.codec, None, (interrupt_before, interrupt_after)),
            graph_name=run.graph_name,
            graph_version=run.graph_version,
            durability=run.durability,
        )

    def resume(
        self,
        run_id: str,
        decision: Any,
        *,
        actor: Actor | None = None,
        digest: str | None = None,
        interrupt_id: str | None = None,
        tenant: str | None = None,
    ) -> None:
        """Answer a run's open interrupt, then let a worker (or ``invoke(None)``) continue.

        An approval needs an ``actor`` the policy allows and the ``digest`` of the proposal
        it answers (``pending(run_id)`` shows it); a refusal raises ``ApprovalRefused``,
        is audited, and changes nothing. The run is looked up in this client's tenant (or
        ``tenant``), and the actor must act for that same tenant.
        """
        require(self.scope, "execute", "resume or approve a run")
        try:
            tenant = self._tenant(tenant)  # the actor's own claim is checked, never trusted
        except TenantMismatchError:
            who = actor.id if actor is not None else "anonymous"
            audit_refusal(
                self.store, str(tenant), run_id, who, digest, "wrong_tenant", via=self.tenant
            )
            raise
        decide(
            self.store,
            self.codec,
            tenant,
            run_id,
            decision,
            actor=actor,
            digest=digest,
            interrupt_id=interrupt_id,
            policy=self.policy,
        )
        run = self.get(run_id, tenant=tenant)
        self.store.enqueue(
            tenant,
            run_id,
            encode_inbox(self.codec, None),
            graph_name=run.graph_name,
            graph_version=run.graph_version,
            durability=run.durability,
        )

    def pending(self, run_id: str, *, tenant: str | None = None) -> list[Interrupt]:
        """The open questions of a waiting run, with what a decision must name."""
        run = self.get(run_id, tenant=tenant)
        return [
            Interrupt(
                self.codec.loads(i.value),
                i.interrupt_id,
                i.approvers,
                i.expires_at,
                i.digest,
                i.cls,
            )
            for i in self.store.load_interrupts(run.tenant_id, run_id, run.step + 1)
            if i.resume is None
        ]

    def audit(self, run_id: str, *, tenant: str | None = None) -> list[AuditRecord]:
        return self.store.load_audit(self._tenant(tenant), run_id)

    def get(self, run_id: str, *, tenant: str | None = None) -> RunRecord:
        tenant = self._tenant(tenant)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r}")
        return run

    def _tenant(self, tenant: str | None) -> str:
        """The tenant a call acts for: this client's, or (unpinned only) the one named."""
        if tenant is None or tenant == self.tenant:
            return self.tenant
        if self.pinned:
            raise TenantMismatchError(
                f"this client is pinned to tenant {self.tenant!r} and cannot act for tenant "
                f"{tenant!r}: use a client of that tenant (Wayline(url, tenant={tenant!r}))"
            )
        return tenant

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

    def cancel(self, run_id: str, *, tenant: str | None = None, actor: str | None = None) -> bool:
        """Cancel now if no worker holds the run, else at its worker's next step (audited)."""
        require(self.scope, "execute", "cancel a run")
        tenant_id = self._tenant(tenant)
        done = self.store.request_cancel(tenant_id, run_id)
        self._audit(tenant_id, run_id, actor, "cancel", "requested" if done else "refused")
        return done

    def retry(self, run_id: str, *, tenant: str | None = None, actor: str | None = None) -> bool:
        """Put a failed (dead-lettered) or parked run back in the queue, budget reset
        (audited)."""
        require(self.scope, "execute", "retry a run")
        tenant_id = self._tenant(tenant)
        done = self.store.requeue(tenant_id, run_id)
        self._audit(tenant_id, run_id, actor, "retry", "requeued" if done else "refused")
        return done

    def purge(self, run_id: str, *, tenant: str | None = None, actor: str | None = None) -> int:
        """Erase a run: every row in every table, and the blobs only it referenced, in one
        transaction, after the runs of its subgraphs (each in a transaction of its own).
        Returns the rows deleted (0: no such run for this tenant). A receipt (who, when,
        rows deleted, no payload) is written to the audit after the run is gone, so it
        outlives it."""
        from wayline.graph.subgraph import child_runs

        require(self.scope, "admin", "purge a run")
        tenant_id = self._tenant(tenant)
        children = child_runs(self.store, tenant_id, run_id)
        deleted = sum(self.store.purge_run(tenant_id, child) for child in children)
        deleted += self.store.purge_run(tenant_id, run_id)
        detail = json.dumps({"rows": deleted, "subgraph_runs": len(children)})
        self._audit(tenant_id, run_id, actor, "purge", "erased" if deleted else "none", detail)
        return deleted

    def _audit(
        self,
        tenant_id: str,
        run_id: str,
        actor: str | None,
        action: str,
        outcome: str,
        detail: str | None = None,
    ) -> None:
        """An operator action in the run's audit log: who, what, when, how it went."""
        who = actor or self.operator
        self.store.append_audit(
            AuditRecord(tenant_id, run_id, who, action, outcome, detail=detail, at=time.time())
        )

    def purge_older_than(
        self,
        age_seconds: float,
        *,
        statuses: Sequence[str] = TERMINAL_STATUSES,
        tenant: str | None = None,
        dry_run: bool = False,
    ) -> list[str]:
        """The retention policy: purge this tenant's finished runs older than the age.
        Returns their ids; with ``dry_run`` the ids it would purge, purging nothing."""
        require(self.scope, "admin", "purge runs")
        return purge_older_than(
            self.store, self._tenant(tenant), age_seconds, statuses=statuses, dry_run=dry_run
        )

    def export(self, run_id: str, *, tenant: str | None = None) -> dict[str, Any]:
        """Everything held for a run, decoded, as JSON-ready data (subject access); a
        fork's ``origin`` (run, step, effect mode) on top."""
        data = export_run(self.store, self.codec, self._tenant(tenant), run_id)
        origin = load_origin(self.store, self._tenant(tenant), run_id)
        data["origin"] = None if origin is None else dataclasses.asdict(origin)
        return data

    def fork(
        self,
        run_id: str,
        step: int,
        *,
        new_run_id: str | None = None,
        effects: str = "original",
        graph: CompiledGraph | None = None,
        substitutes: Mapping[str, Substitute] | None = None,
        durability: str = "sync",
        actor: str = "client",
        tenant: str | None = None,
    ) -> str:
        """Fork ``run_id`` after ``step`` into a new run and return its id.

        The fork shares the original's steps up to ``step``, records its origin, and runs
        under ``effects``: ``"original"`` (the default: recorded outcomes, a new effect is
        refused), ``"sandbox"`` (effects call ``substitutes[name](EffectCall)``) or
        ``"live"`` (effects happen again under new keys; ask for it by name). With ``graph``
        the fork runs here and now (``invoke``); without, it waits for a worker (a sandbox
        fork needs its substitutes, so run those here).
        """
        require(self.scope, "execute", "fork a run")
        tenant = self._tenant(tenant)
        check_mode(effects)
        new_run_id = new_run_id or fork_id_for(self.store, tenant, run_id, step)
        if graph is None:
            owner = default_owner()
            token = create_fork(
                self.store,
                tenant,
                run_id,
                step,
                new_run_id=new_run_id,
                effects=effects,
                owner=owner,
                durability=durability,
                actor=actor,
            )
            self.store.release(tenant, new_run_id, token)
            return new_run_id
        conf = {
            "thread_id": run_id,
            "tenant": tenant,
            "step": step,
            "fork_id": new_run_id,
            "effects": effects,
            "substitutes": dict(substitutes or {}),
            "actor": actor,
        }
        graph.with_store(self.store).invoke(None, {"configurable": conf}, durability=durability)
        return new_run_id

    def origin(self, run_id: str, *, tenant: str | None = None) -> ForkOrigin | None:
        """Where a fork came from (None: the run is not a fork)."""
        return load_origin(self.store, self._tenant(tenant), run_id)

    def migrate(
        self,
        run_id: str,
        old: CompiledGraph,
        new: CompiledGraph,
        *,
        tenant: str | None = None,
    ) -> RunRecord:
        """Carry a run written by ``old`` onto ``new`` with the migration ``new`` registered
        (``StateGraph.migrate``); refused, with nothing changed, if the result does not fit."""
        require(self.scope, "admin", "migrate a run")
        return migrate_run(self.store, self._tenant(tenant), run_id, old, new)

    def list_runs(
        self, *, status: RunStatus | None = None, limit: int = 100, tenant: str | None = None
    ) -> list[RunRecord]:
        return self.store.list_runs(self._tenant(tenant), status=status, limit=limit)

    # -- data classes -------------------------------------------------------------------

    def export_subject(self, subject: str, *, tenant: str | None = None) -> dict[str, Any]:
        """Everything held about a data subject across its runs, decoded, JSON-ready."""
        return export_subject(self.store, self.codec, self._tenant(tenant), subject)

    def erase_subject(
        self,
        subject: str,
        *,
        classes: Collection[str] | None = None,
        tenant: str | None = None,
        actor: str = "admin",
    ) -> dict[str, Any]:
        """Erase a data subject from every run that names it: ``classes`` redacted from
        each (the rest kept), or each run purged whole (None). Returns the receipt (runs,
        rows per table), which is also written to the audit log."""
        require(self.scope, "admin", "erase a data subject")
        return erase_subject(
            self.store, self._tenant(tenant), subject, classes=classes, actor=actor
        )

    def redact(
        self, run_id: str, classes: Collection[str], *, tenant: str | None = None
    ) -> dict[str, int]:
        """Erase the values of ``classes`` from every row of a run; returns rows changed."""
        require(self.scope, "admin", "redact a run")
        return redact_run(self.store, self._tenant(tenant), run_id, classes)

    def apply_policy(
        self, policy: DataPolicy, *, dry_run: bool = False, tenant: str | None = None
    ) -> list[dict[str, Any]]:
        """Apply a retention policy by data class to this tenant's finished runs."""
        require(self.scope, "admin", "apply a retention policy")
        return apply_policy(self.store, policy, tenant_id=self._tenant(tenant), dry_run=dry_run)
