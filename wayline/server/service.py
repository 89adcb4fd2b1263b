"""What the LangGraph-compatible routes do, as blocking functions over the store (the
routes run them in worker threads). Nothing here executes a node: starting a run puts its
input in the thread's inbox for a worker, resuming records the decision and queues the
run, and reading a state reconstructs it from the store.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from wayline.codec import default_codec
from wayline.control.approvals import decide
from wayline.control.keys import Principal
from wayline.graph import travel
from wayline.graph.checkpoint import BreakpointNames, Breakpoints, encode_inbox
from wayline.graph.types import Command, StateSnapshot
from wayline.ids import RunRef
from wayline.server.assistant_book import AssistantBook, merged_config
from wayline.server.bell import Bell
from wayline.server.http import ApiError
from wayline.server.multitask import NOT_STARTED, Line, ended_as, line_of, strategy
from wayline.server.registry import Assistant, Registry, UnknownAssistant
from wayline.server.rollback import rollback
from wayline.server.stream import recorded_modes
from wayline.server.views import (
    FINAL,
    checkpoint_step,
    pre_input_state,
    run_json,
    run_status,
    settled,
    state_json,
    thread_json,
    thread_status,
)
from wayline.store.assistant_tables import AssistantTables
from wayline.store.base import Store
from wayline.store.records import RunProgress, RunRecord
from wayline.store.server_tables import ServerTables, ThreadRecord, ThreadRunRecord
from wayline.store.sql_core import Executor

__all__ = ["STREAM_MODES", "RunStart", "Service", "page"]

STREAM_MODES = ("values", "updates", "custom", "messages", "messages-tuple", "events", "debug")
QUIET_MODES = ("tasks", "checkpoints")
"""Accepted so that chat UIs asking for them work, but they carry nothing yet: the graph
API emits custom and token events in process, and the server's streams are read from the
store, where those are not written (docs/server.md says what it takes)."""
_UNSUPPORTED = ("checkpoint", "checkpoint_id")
SEARCH_BATCH = 1000
"""Threads a search reads at a time while it filters: as many batches as it takes to fill
the page asked for (a tenant's thread past the first thousand is found too)."""


class RunStart:
    """A run accepted: its record, and whether its stream opens with the current state
    (a resume does; new input shows up as the input step)."""

    def __init__(self, record: ThreadRunRecord, assistant: Assistant, resumed: bool) -> None:
        self.record = record
        self.assistant = assistant
        self.resumed = resumed


class Service:
    def __init__(self, store: Store, tables: ServerTables, registry: Registry) -> None:
        self.store = store
        self.tables = tables
        self.registry = registry
        self.bell = Bell()
        """Wakes a run's streams when it moves (``wayline.server.bell``)."""
        self.stream_fallback = 0.1
        """``ServerConfig.stream_fallback``."""
        self.webhooks = False
        """Whether the server signs webhook POSTs (``ServerConfig.webhook_secret``)."""
        self.assistants = AssistantBook(registry, AssistantTables(tables.store))
        """The served graphs and the assistants made over the API."""
        self._locks = [threading.Lock() for _ in range(64)]
        """Striped: starting a run on a thread is checked and queued under its stripe."""

    # -- threads ----------------------------------------------------------------------

    def create_thread(self, who: Principal, body: dict[str, Any]) -> dict[str, Any]:
        given = body.get("thread_id")
        thread_id = given or str(uuid.uuid4())
        if not isinstance(thread_id, str):
            raise ApiError(422, f"thread_id must be a string, not {thread_id!r}")
        metadata = _object(body, "metadata")
        now = time.time()
        created = self.tables.insert_thread(who.tenant, thread_id, metadata, now=now)
        if not created and body.get("if_exists") != "do_nothing":
            raise ApiError(409, f"Thread {thread_id} already exists")
        if created and not given:  # a new id has no run and no queue: no reads to say so
            stored = json.loads(json.dumps(metadata))  # as a read would give it back
            return thread_json(ThreadRecord(who.tenant, thread_id, stored, now, now), None, None)
        return self.thread_view(who, thread_id)

    def thread(self, who: Principal, thread_id: str) -> ThreadRecord:
        found = self.tables.get_thread(who.tenant, thread_id)
        if found is None:
            raise ApiError(404, f"Thread with ID {thread_id} not found")
        return found

    def thread_view(self, who: Principal, thread_id: str) -> dict[str, Any]:
        thread = self.thread(who, thread_id)
        run = self.store.get_run(who.tenant, thread_id)
        snap = self._snapshot(run) if run is not None and run.step >= 0 else None
        out = thread_json(thread, run, snap)
        if out["status"] == "idle" and self._queued(who, thread_id):
            out["status"] = "busy"  # its run stopped; the next queued one starts now
        return out

    def _queued(self, who: Principal, thread_id: str) -> bool:
        """Whether input waits in the thread's queue (``multitask_strategy="enqueue"``)."""
        return bool(line_of(self.store, self.tables, who.tenant, thread_id).waiting)

    def search_threads(self, who: Principal, body: dict[str, Any]) -> list[dict[str, Any]]:
        limit, offset = page(body)
        wanted_meta = _object(body, "metadata")
        wanted_status = body.get("status")
        out: list[str] = []
        scanned = 0
        while len(out) < offset + limit:  # the filters run here: read in batches, newest first
            batch = self.tables.search_threads(who.tenant, limit=SEARCH_BATCH, offset=scanned)
            if not batch:
                break
            scanned += len(batch)
            for thread in batch:
                if any(thread.metadata.get(k) != v for k, v in wanted_meta.items()):
                    continue
                if wanted_status is not None:
                    run = self.store.get_run(who.tenant, thread.thread_id)
                    status = thread_status(run)
                    if status == "idle" and self._queued(who, thread.thread_id):
                        status = "busy"
                    if status != wanted_status:
                        continue
                out.append(thread.thread_id)
        return [self.thread_view(who, t) for t in out[offset : offset + limit]]

    def count_threads(self, who: Principal) -> int:
        return self.tables.count_threads(who.tenant)

    def patch_thread(self, who: Principal, thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        thread = self.thread(who, thread_id)
        metadata = _object(body, "metadata")
        self.tables.update_thread(who.tenant, thread_id, {**thread.metadata, **metadata})
        return self.thread_view(who, thread_id)

    def delete_thread(self, who: Principal, thread_id: str) -> None:
        """Erase the thread: its run's every row (a purge) and the server's rows."""
        who.require("admin")
        self.thread(who, thread_id)
        self.store.request_cancel(who.tenant, thread_id)
        self.store.purge_run(who.tenant, thread_id)
        self.tables.delete_thread(who.tenant, thread_id)

    # -- state ------------------------------------------------------------------------

    def _snapshot(self, run: RunRecord, step: int | None = None) -> StateSnapshot:
        assistant = self._assistant_for(run)
        conf: dict[str, Any] = {"thread_id": run.run_id, "tenant": run.tenant_id}
        if step is not None:
            conf["step"] = step
        return assistant.graph.get_state({"configurable": conf})

    def _assistant_for(self, run: RunRecord) -> Assistant:
        assistant = self.registry.for_run(run)
        if assistant is None:
            raise ApiError(
                409,
                f"thread {run.run_id} was written by graph {run.graph_name!r}, which this "
                "server does not serve: start the server with that graph",
            )
        return assistant

    def state(
        self, who: Principal, thread_id: str, checkpoint: str | None = None
    ) -> dict[str, Any]:
        thread = self.thread(who, thread_id)
        run = self.store.get_run(who.tenant, thread_id)
        if run is None or run.step < 0:
            return state_json(thread_id, None, None)
        graph_id = self._assistant_for(run).name
        step = None if checkpoint is None else checkpoint_step(checkpoint)
        if checkpoint is not None and (step is None or step > run.step):
            raise ApiError(404, f"Checkpoint {checkpoint} not found in thread {thread_id}")
        if step == -1:
            return pre_input_state(thread_id, thread.created_at, graph_id)
        return state_json(thread_id, self._snapshot(run, step), graph_id)

    def history(self, who: Principal, thread_id: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        thread = self.thread(who, thread_id)
        limit, _ = page(body)
        if body.get("metadata"):  # filtering would reconstruct every step to test it
            raise ApiError(422, "a metadata filter on history is not supported by wayline serve")
        namespace = _object(body, "checkpoint").get("checkpoint_ns")
        if namespace:
            raise ApiError(422, "the history of a subgraph (checkpoint_ns) is not supported yet")
        run = self.store.get_run(who.tenant, thread_id)
        if run is None or run.step < 0:
            return []
        graph_id = self._assistant_for(run).name
        top = run.step
        before = body.get("before")
        if before is not None:  # a checkpoint id, or a config or checkpoint naming one
            cid = before
            if isinstance(before, dict):
                cid = (before.get("configurable") or before).get("checkpoint_id")
            step = checkpoint_step(cid) if isinstance(cid, str) and cid else None
            if step is None:
                raise ApiError(422, "before must name a checkpoint_id from this thread")
            top = step - 1
        out: list[dict[str, Any]] = []
        for step in range(top, -2, -1):
            if len(out) >= limit:
                break
            if step == -1:
                out.append(pre_input_state(thread_id, thread.created_at, graph_id))
            else:
                out.append(state_json(thread_id, self._snapshot(run, step), graph_id))
        return out

    def update_state(self, who: Principal, thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        who.require("execute")
        self.thread(who, thread_id)
        with self._thread_lock(who.tenant, thread_id):
            run = self.store.get_run(who.tenant, thread_id)
            if run is None:
                raise ApiError(409, f"thread {thread_id} has no state yet: run it first")
            if not settled(run):
                raise ApiError(409, f"Thread {thread_id} is busy: wait for its run, then update")
            graph = self._assistant_for(run).graph
            conf = RunRef(who.tenant, thread_id).config()
            out = graph.update_state(conf, body.get("values"), body.get("as_node"))
        step = travel.requested_step(out, who.tenant, thread_id)
        state = state_json(thread_id, self._snapshot(self._run(who, thread_id), step), None)
        return {
            "checkpoint": state["checkpoint"],
            "configurable": state["checkpoint"],
            "checkpoint_id": state["checkpoint_id"],
        }

    def _run(self, who: Principal, thread_id: str) -> RunRecord:
        run = self.store.get_run(who.tenant, thread_id)
        if run is None:
            raise ApiError(404, f"Thread with ID {thread_id} not found")
        return run

    # -- runs -------------------------------------------------------------------------

    def start_run(self, who: Principal, thread_id: str | None, body: dict[str, Any]) -> RunStart:
        """Validate, record and queue a run; refuse (409) if the thread is busy."""
        who.require("execute")
        try:
            assistant, stored = self.assistants.resolve(
                who.tenant, str(body.get("assistant_id") or "")
            )
        except UnknownAssistant as exc:
            raise ApiError(422, str(exc.args[0])) from None
        _check_options(body)
        self._check_webhook(body)
        _object(body, "metadata")  # both read later, once the thread is held: checked now
        _subject(body)
        _object(body, "context")
        run_config = merged_config(stored, body)
        command = body.get("command")
        if command is not None and not isinstance(command, dict):
            raise ApiError(422, "command must be an object like {'resume': ...}")
        durability = body.get("durability") or "sync"
        if durability not in ("sync", "async", "exit"):
            raise ApiError(422, f"durability must be sync, async or exit, not {durability!r}")
        if thread_id is None:
            thread_id = str(uuid.uuid4())
            self.tables.insert_thread(who.tenant, thread_id, {})
        elif self.tables.get_thread(who.tenant, thread_id) is None:
            if body.get("if_not_exists") != "create":
                raise ApiError(404, f"Thread with ID {thread_id} not found")
            self.tables.insert_thread(who.tenant, thread_id, {})
        resumed = command is not None and "resume" in command
        breakpoints = (_names(body, "interrupt_before"), _names(body, "interrupt_after"))
        multitask = strategy(body)
        with self._thread_lock(who.tenant, thread_id):
            run = self.store.get_run(who.tenant, thread_id)
            line = line_of(self.store, self.tables, who.tenant, thread_id)
            busy = (run is not None and not settled(run)) or bool(line.waiting)
            if multitask == "interrupt" and run is not None and busy:
                run = self._interrupt(who, thread_id, run)
                line = line_of(self.store, self.tables, who.tenant, thread_id)
            elif multitask == "rollback" and run is not None and busy:
                run = rollback(
                    self.store,
                    self.tables,
                    who,
                    thread_id,
                    run,
                    bell=self.bell,
                    fallback=self.stream_fallback,
                )
                line = line_of(self.store, self.tables, who.tenant, thread_id)
            queued = multitask == "enqueue" and busy  # behind the runs before it, in order
            self._check_free(who, thread_id, run, assistant, line, queued=queued)
            # no input and no command continues the thread (past a breakpoint, say); its
            # stream, as a resume's, opens with the state it continues from
            continued = command is None and body.get("input") is None
            opens_with_state = resumed or (continued and run is not None and run.step >= 0)
            now = time.time()
            record = ThreadRunRecord(
                tenant_id=who.tenant,
                run_id=str(uuid.uuid4()),
                thread_id=thread_id,
                assistant_id=assistant.assistant_id,
                status="pending",
                start_step=NOT_STARTED if queued else run.step if run is not None else -1,
                metadata={
                    **(stored.metadata if stored is not None else {}),
                    **(body.get("metadata") or {}),
                    "graph_id": assistant.name,
                    "assistant_id": assistant.assistant_id,
                },
                kwargs={
                    "input": None,  # stored once, as the run's metered inbox
                    "command": None,
                    "stream_mode": _modes(body),
                    "stream_subgraphs": bool(body.get("stream_subgraphs")),
                    "durability": durability,
                    "actor": who.actor,
                    "interrupt_before": breakpoints[0],
                    "interrupt_after": breakpoints[1],
                    "resumed": opens_with_state,  # its stream opens with the current state
                    "on_disconnect": body.get("on_disconnect") or "continue",
                    "multitask_strategy": multitask,
                },
                created_at=now,
                updated_at=now,
            )
            if resumed and (run is None or run.status != "interrupted"):
                raise ApiError(
                    409,
                    f"thread {thread_id} is not waiting on an interrupt; there is nothing "
                    "to resume (send input instead)",
                )
            if resumed and command is not None:  # checked and recorded first: a refused
                self._decide(who, thread_id, run, command["resume"])  # one leaves no run
            queue = self._queue(
                who,
                thread_id,
                run,
                assistant,
                body,
                durability,
                breakpoints,
                run_config,
                queued_as=record.run_id if queued else None,
            )
            # the API run, its thread's tags and its input: one commit (all or nothing)
            self.tables.insert_run(record, tags=self._tags(who, thread_id, assistant), then=queue)
        return RunStart(record, assistant, opens_with_state)

    def _interrupt(self, who: Principal, thread_id: str, run: RunRecord) -> RunRecord:
        """``multitask_strategy="interrupt"``: stop the thread's run at its next step
        boundary (its finished steps stay, as the platform keeps them), mark its API run
        interrupted, and wait for it to stop; then the new run takes the thread."""
        with self.bell.subscribe_blocking(who.tenant, thread_id) as waiter:
            self.store.request_cancel(who.tenant, thread_id)
            latest = self.latest_started(who, thread_id)
            if latest is not None and latest.status not in FINAL:
                self.tables.settle_run(who.tenant, latest.run_id, "interrupted")
            deadline = time.monotonic() + INTERRUPT_WAIT
            while (left := deadline - time.monotonic()) > 0:
                waiter.clear()  # the run's stop from here on wakes the wait below
                current = self.store.get_run(who.tenant, thread_id)
                if current is None or settled(current):
                    return current or run
                waiter.wait(min(self.stream_fallback, left))
        raise ApiError(
            409,
            f"thread {thread_id}'s run did not stop within {INTERRUPT_WAIT:.0f}s of being "
            "interrupted (its worker is in a long step); try again, or join it",
        )

    def _check_webhook(self, body: dict[str, Any]) -> None:
        hook = body.get("webhook")
        if hook is None:
            return
        if not isinstance(hook, str) or not hook.startswith(("http://", "https://")):
            raise ApiError(422, f"webhook must be an http(s) URL, not {hook!r}")
        if not self.webhooks:
            raise ApiError(
                422,
                "webhook needs a signing key: start wayline serve with --webhook-secret "
                "(or WAYLINE_WEBHOOK_SECRET) and its POSTs carry X-Wayline-Signature",
            )

    def _tags(self, who: Principal, thread_id: str, assistant: Assistant) -> dict[str, Any] | None:
        """As LangGraph: a thread's metadata names the graph and assistant that ran on it
        (its new metadata, None when it has them)."""
        thread = self.tables.get_thread(who.tenant, thread_id)
        if thread is None or "graph_id" in thread.metadata:
            return None
        tags = {"graph_id": assistant.name, "assistant_id": assistant.assistant_id}
        return {**thread.metadata, **tags}

    def _check_free(
        self,
        who: Principal,
        thread_id: str,
        run: RunRecord | None,
        assistant: Assistant,
        line: Line,
        *,
        queued: bool = False,
    ) -> None:
        """Refuse a run the thread cannot take now (``queued``: it waits its turn, so only
        what would refuse it then refuses it now). ``line``: the thread's, read under its
        lock."""
        latest = line.latest_started()
        if latest is not None and latest.status not in FINAL:
            self.current_status(who, latest)
        if run is None:
            return
        if run.graph_name != assistant.graph.name:
            raise ApiError(
                409,
                f"thread {thread_id} belongs to graph {run.graph_name!r}, not "
                f"{assistant.name!r}: start a new thread for this assistant",
            )
        if queued:
            return
        if not settled(run) or line.waiting:
            raise ApiError(
                409,
                f"Thread {thread_id} is busy with a run ({run.status}); join it or cancel "
                "it first, or send multitask_strategy enqueue, interrupt or rollback "
                "(multitask strategy: reject)",
            )
        if run.status == "parked":
            raise ApiError(
                409,
                f"thread {thread_id} is parked on an effect whose outcome is unknown: resolve "
                "it (/wayline/runs/{id}/effects) first",
            )

    def _queue(
        self,
        who: Principal,
        thread_id: str,
        run: RunRecord | None,
        assistant: Assistant,
        body: dict[str, Any],
        durability: str,
        breakpoints: Breakpoints,
        run_config: dict[str, Any] | None = None,
        *,
        queued_as: str | None = None,
    ) -> Callable[[Executor], None]:
        """How to hand the input to the thread's inbox in the caller's transaction
        (``queued_as``: to its queue, behind the inputs before it, labelled with the API
        run's id). Encoded now, outside the transaction."""
        command = body.get("command") or {}
        inbox: Any = None if "resume" in command else body.get("input")
        if command.get("update") is not None or command.get("goto"):
            inbox = Command(update=command.get("update"), goto=command.get("goto") or ())
        graph = assistant.graph
        store = self.tables.store
        encoded = encode_inbox(
            graph.codec,
            inbox,
            breakpoints,
            _emitted_modes(body),
            webhook=body.get("webhook"),
            run_config=run_config,
            subgraphs=queued_as is None and bool(body.get("stream_subgraphs")),
        )
        if queued_as is not None:
            label = queued_as

            def queue(db: Executor) -> None:
                store.queue_in(db, who.tenant, thread_id, encoded, label=label)

            return queue
        reopen = run is not None and run.status == "cancelled"
        tables = self.tables

        def enqueue(db: Executor) -> None:
            if reopen:  # a run cancelled through the API takes new input
                db.execute(tables.q.Q_REOPEN, (time.time(), who.tenant, thread_id))
            store.enqueue_in(
                db,
                who.tenant,
                thread_id,
                encoded,
                graph_name=graph.name,
                graph_version=graph.version,
                durability=run.durability if run is not None else durability,
                schema_version=graph.schema_version,
                subject=_subject(body),
                classes=graph.schema.classes,
                identity=(getattr(graph, "fingerprint", ""), getattr(graph, "shape_json", None)),
                engine=getattr(graph, "kind", "wayline"),
            )

        return enqueue

    def _decide(self, who: Principal, thread_id: str, run: RunRecord | None, value: Any) -> None:
        """Answer the thread's open interrupt as the key's actor (an approval checks the
        actor against its approvers; every decision is audited)."""
        target = self._open_interrupt(who, thread_id, run)
        decide(
            self.store,
            default_codec,
            who.tenant,
            thread_id,
            value,
            actor=who.as_actor,
            digest=target.digest,
            interrupt_id=target.interrupt_id,
        )

    def _open_interrupt(self, who: Principal, thread_id: str, run: RunRecord | None) -> Any:
        """The one question a resume answers (the server names its digest: the client
        answers what the thread shows it; who answers is still checked)."""
        assert run is not None
        waiting = [
            i
            for i in self.store.load_interrupts(who.tenant, thread_id, run.step + 1)
            if i.resume is None
        ]
        if len(waiting) != 1:
            raise ApiError(
                409,
                f"thread {thread_id} has {len(waiting)} open interrupts; decide each with "
                "/wayline/runs/{id}/approvals/decide naming its interrupt_id",
            )
        return waiting[0]

    def run_record(self, who: Principal, thread_id: str, run_id: str) -> ThreadRunRecord:
        self.thread(who, thread_id)
        rec = self.tables.get_run(who.tenant, thread_id, run_id)
        if rec is None:
            raise ApiError(404, f"Run {run_id} not found in thread {thread_id}")
        return rec

    def end_step(self, who: Principal, rec: ThreadRunRecord) -> int | None:
        """The last step of a run that a later run followed on its thread (None: the run
        is the thread's latest, it ends when the thread's run stops)."""
        line_of(self.store, self.tables, who.tenant, rec.thread_id)  # queued starts recorded
        return self.tables.next_start_step(who.tenant, rec.thread_id, rec.created_at)

    def queued_end(self, who: Principal, rec: ThreadRunRecord) -> int | None:
        """``end_step`` once a queued run took the thread on (None before): what a stream
        asks at every poll, so one read of the thread's queue when nothing was queued."""
        queue = self.store.queued_inputs(who.tenant, rec.thread_id)
        if not any(e.promoted_at is not None for e in queue):
            return None
        return self.end_step(who, rec)

    def start_step(self, who: Principal, rec: ThreadRunRecord) -> int | None:
        """Where the run began on its thread (None: queued, not started yet)."""
        if rec.start_step != NOT_STARTED:
            return rec.start_step
        found = line_of(self.store, self.tables, who.tenant, rec.thread_id).fresh(rec)
        return None if found.start_step == NOT_STARTED else found.start_step

    def latest_started(self, who: Principal, thread_id: str) -> ThreadRunRecord | None:
        """The API run that holds the thread now, or held it last (not one queued)."""
        return line_of(self.store, self.tables, who.tenant, thread_id).latest_started()

    def run_view(self, who: Principal, rec: ThreadRunRecord) -> dict[str, Any]:
        return run_json(rec, self.current_status(who, rec))

    def record_end(self, who: Principal, rec: ThreadRunRecord, run: RunProgress) -> None:
        """From a stream that saw its run stop while it held the thread: how it ended,
        recorded as ``current_status`` would (``record_settled``: no commit waited for),
        so the ``GET`` of the run the SDK sends next reads it (``api.run_get``)."""
        status = run_status(rec, run, latest=True)
        if status in FINAL:
            self.tables.record_settled(who.tenant, rec.run_id, status)

    def current_status(self, who: Principal, rec: ThreadRunRecord) -> str:
        if rec.status in FINAL:
            return rec.status
        line = line_of(self.store, self.tables, who.tenant, rec.thread_id)
        rec = line.fresh(rec)
        if rec.run_id in line.waiting or rec.start_step == NOT_STARTED:
            return "pending"  # its input waits for the runs before it
        latest = line.latest_started()
        if latest is not None and latest.run_id == rec.run_id:
            run = self.store.run_progress(who.tenant, rec.thread_id)
            status = run_status(rec, run, latest=True)
        else:  # a later run took the thread on: how this one ended, when the queue says
            after = line.successor(rec)
            status = ended_as(line.entries.get(after.run_id) if after is not None else None)
        if status in FINAL:
            self.tables.record_settled(who.tenant, rec.run_id, status)
        return status

    def list_runs(
        self, who: Principal, thread_id: str, *, limit: int, offset: int, status: str | None
    ) -> list[dict[str, Any]]:
        self.thread(who, thread_id)
        recs = self.tables.list_runs(who.tenant, thread_id, limit=limit, offset=offset)
        views = [self.run_view(who, r) for r in recs]
        return [v for v in views if status is None or v["status"] == status]

    def cancel(self, who: Principal, thread_id: str, run_id: str, action: str) -> None:
        """Stop the run at its next step boundary; its finished steps stay and the thread
        takes new runs (``action=interrupt``). A queued run leaves the queue."""
        who.require("execute")
        if action != "interrupt":
            raise ApiError(422, f"cancel action {action!r} is not supported; use action=interrupt")
        rec = self.run_record(who, thread_id, run_id)
        if self.current_status(who, rec) in FINAL:
            raise ApiError(404, f"Run {run_id} has finished; there is nothing to cancel")
        if not self.store.drop_queued(who.tenant, thread_id, run_id):
            self.store.request_cancel(who.tenant, thread_id)
        self.tables.settle_run(who.tenant, run_id, "interrupted")
        self.bell.ring([(who.tenant, thread_id)])  # its joins answer now (no store move)

    def joined(self, who: Principal, rec: ThreadRunRecord) -> dict[str, Any] | None:
        """What ``join`` (and ``runs/wait``) of one API run returns once it ended (None
        before): the thread's outcome if no run followed it, else the values it left."""
        if self.current_status(who, rec) not in FINAL:
            return None
        end = self.end_step(who, rec)
        if end is None:
            return self.outcome(who, rec.thread_id)
        if end < 0:
            return {}
        state = state_json(rec.thread_id, self._snapshot(self._run(who, rec.thread_id), end), None)
        return dict(state["values"])

    def outcome(self, who: Principal, thread_id: str) -> dict[str, Any] | None:
        """What ``runs/wait`` and ``join`` return once the thread's run stops (None before):
        the values, with ``__interrupt__`` when paused and ``__error__`` when it failed."""
        run = self.store.get_run(who.tenant, thread_id)
        if run is None or not settled(run):
            return None
        if run.step < 0:
            body: dict[str, Any] = {}
        else:
            state = state_json(thread_id, self._snapshot(run), None)
            body = dict(state["values"])
            if state["interrupts"]:
                body["__interrupt__"] = [
                    {**i, "response_schema": None} for i in state["interrupts"]
                ]
        if run.status in ("failed", "parked"):
            kind, _, message = (run.error or "error: unknown").partition(": ")
            body["__error__"] = {"error": kind, "message": message or kind}
        return body

    def _thread_lock(self, tenant: str, thread_id: str) -> threading.Lock:
        return self._locks[hash((tenant, thread_id)) % len(self._locks)]


def page(given: Mapping[str, Any], *, default: int = 10, most: int = 1000) -> tuple[int, int]:
    """``limit`` (``default`` when absent, at most ``most``) and ``offset`` of a listing
    request, from its body or its query string."""
    try:
        limit = max(0, min(int(given.get("limit") or default), most))
        return limit, max(0, int(given.get("offset") or 0))
    except (TypeError, ValueError):
        raise ApiError(422, "limit and offset must be integers") from None


INTERRUPT_WAIT = 30.0
"""How long ``multitask_strategy="interrupt"`` waits for the thread's run to stop."""


def _modes(body: dict[str, Any]) -> list[str]:
    modes = body.get("stream_mode") or ["values"]
    if not isinstance(modes, str | list):
        raise ApiError(422, f"stream_mode must be a mode or a list of modes, not {modes!r}")
    modes = [modes] if isinstance(modes, str) else modes
    unknown = [m for m in modes if m not in STREAM_MODES + QUIET_MODES]
    if unknown:
        raise ApiError(422, f"unknown stream_mode {unknown}; wayline streams {list(STREAM_MODES)}")
    return modes


def _subject(body: dict[str, Any]) -> str | None:
    """The data subject a new run names: ``config.configurable.subject`` (docs/data.md)."""
    configurable = _object(_object(body, "config"), "configurable", "config.configurable")
    subject = configurable.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise ApiError(422, "config.configurable.subject must be a string")
    return subject or None


def _object(body: dict[str, Any], name: str, called: str | None = None) -> dict[str, Any]:
    """A field that must be a JSON object when given (absent or null: empty): anything else
    is the client's mistake, 422, not a server error."""
    value = body.get(name) or {}
    if not isinstance(value, dict):
        raise ApiError(422, f"{called or name} must be a JSON object, not {type(value).__name__}")
    return value


def _check_options(body: dict[str, Any]) -> None:
    for name in _UNSUPPORTED:
        if body.get(name):
            raise ApiError(
                422,
                f"{name} is not supported by wayline serve yet; run without it "
                "(see docs/server.md for the supported subset)",
            )
    if body.get("input") not in (None, {}) and body.get("command") is not None:
        # an empty input beside a command is what useStream's submit({}, {command}) sends
        raise ApiError(422, "send either input or command, not both")


def _names(body: dict[str, Any], field: str) -> BreakpointNames:
    """``interrupt_before``/``interrupt_after`` as langgraph-sdk sends them: ``"*"`` or a
    list of node names (a name LangGraph does not check against the graph; neither do we:
    it never matches)."""
    given = body.get(field)
    if given is None or given == "*":
        return given
    if isinstance(given, list) and all(isinstance(n, str) for n in given):
        return given
    raise ApiError(422, f'{field} must be "*" or a list of node names, not {given!r}')


def _emitted_modes(body: dict[str, Any]) -> list[str]:
    """The asked stream modes a worker records as nodes emit them (the rest are read back
    from committed steps): queued with the input, so only a run that asked pays for them."""
    return sorted(recorded_modes(_modes(body)))
