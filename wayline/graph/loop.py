"""The run loop: the I/O shell around the pure fold, shared by the sync and async drivers.

A driver asks ``next_step`` for tasks, runs them (threads or coroutines: the only part that
differs), hands each outcome to ``task_done`` and the step to ``after_step``. Everything
that touches the store or decides what happens next lives here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wayline.errors import (
    CorruptionError,
    EffectOutcomeUnknown,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    LeaseLost,
    ParentCommand,
    RedactedRunError,
    ResumeError,
    RunExistsError,
    RunParkedError,
    VersionMismatchError,
)
from wayline.graph.algo import (
    PULL,
    ROUTE,
    SEND,
    TaskResult,
    TaskSpec,
    fold_order,
    fold_writes,
    values_of,
)
from wayline.graph.calling import Invocation, router_args, with_managed
from wayline.graph.channels import Channel
from wayline.graph.checkpoint import (
    BlobCache,
    decode_inbox,
    decode_results,
    reconstruct,
)
from wayline.graph.commits import StepCommits, staged_copy
from wayline.graph.identity import check_identity
from wayline.graph.interrupts import UnfinishedStep, answer
from wayline.graph.lg_constants import node_finished
from wayline.graph.node import route_writes, split_output
from wayline.graph.schema import streamed_update
from wayline.graph.segments import LogIndex
from wayline.graph.snapshot_policy import SnapshotPolicy
from wayline.graph.task_errors import failure
from wayline.graph.tasks import ExecTask, TaskOutcome, TaskSteps, defer_split
from wayline.graph.travel import ForkOrigin, is_fork, load_origin
from wayline.graph.types import END, START, Command, Interrupt, Send
from wayline.graph.wakeups import due
from wayline.ids import RunRef
from wayline.memory.step import RunMemory
from wayline.metrics import observe_read
from wayline.store.records import (
    CommitBatch,
    RunCreation,
    RunRecord,
    RunStatus,
    RunUpdate,
    Wake,
    check_durability,
)
from wayline.store.subject_keys import SubjectSeal
from wayline.store.writer import CommitSink, Committer, make_sink

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["ExecTask", "RunLoop", "TaskOutcome"]

Event = tuple[str, Any]

CACHED = {"cached": True}
DEFER = "__defer__"
"""The name of the routing a step commits for the deferred nodes it held back."""
UPDATE = "__update__"
"""The node name of a step written by ``update_state`` without ``as_node``."""


def _subject(config: Mapping[str, Any]) -> str | None:
    subject = (config.get("configurable") or {}).get("subject")
    return None if subject is None or subject == "" else str(subject)


def _check_labels(g: CompiledGraph, run: RunRecord) -> None:
    """A run keeps the classes it was written under: a graph that labels its channels
    differently cannot continue it (its erasures would follow the wrong labels)."""
    if run.classes and dict(run.classes) != dict(g.schema.classes):
        raise VersionMismatchError(
            f"run {run.run_id!r} was written with data classes {dict(run.classes)}, this "
            f"graph declares {dict(g.schema.classes)}: relabelling stored data is not "
            "silent; resume it on the code that wrote it (or register a new version with "
            "a migration); nothing was changed"
        )


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class RunLoop(TaskSteps, StepCommits):
    """One invocation of one run: load, step, commit, release."""

    def __init__(
        self,
        graph: CompiledGraph,
        ref: RunRef,
        *,
        durability: str,
        step_limit: int,
        config: Mapping[str, Any],
        owner: str | None = None,
        lease_seconds: float = 300.0,
        token: int | None = None,
        stop: threading.Event | None = None,
        claimed_run: RunRecord | None = None,
        committer: Committer | None = None,
    ) -> None:
        self.graph = graph
        self.store = graph.store
        self.codec = graph.codec
        self.ref = ref
        self.tenant_id, self.run_id = ref.tenant_id, ref.run_id
        self.durability = check_durability(durability)
        self.step_limit = step_limit
        self.config = config
        self.owner = owner or default_owner()
        self.lease_seconds = lease_seconds
        self.channels: dict[str, Channel] = {}
        self.log_keys: frozenset[str] = frozenset()
        """The keys of the append logs among the channels (their kinds never change)."""
        self.logs: dict[str, LogIndex] = {}
        self.next_tasks: list[TaskSpec] = []
        self.step = -1
        self.steps_run = 0
        self.unfinished = UnfinishedStep()
        """What the step after ``step`` left behind: finished peers' writes, questions."""
        self.raised: tuple[Interrupt, ...] = ()
        self.halted = False
        """A subgraph of this step paused at its own breakpoint; so does this run."""
        self.token = token or 0
        self.claimed = token is not None
        """A worker claimed the run already; an in-process invoke takes the lease itself."""
        self.stop = stop
        self.cancelled = False
        self.take_inbox = False
        self._sink: CommitSink | None = None
        self.snapshots = SnapshotPolicy(graph.snapshot_every)
        """When to snapshot: by the fold work a read would redo (``snapshot_policy``)."""
        self.claimed_run = claimed_run
        """The run row as a worker's claim returned it: no need to read it again."""
        self.committer = committer
        """A worker's group committer (``GroupCommit.commit``); None: ``store.commit``."""
        self.multi_task_step = False
        self.input_at: int | None = None
        """The step this invocation's input committed as (an input checkpoint before it)."""
        self.incarnation = ""
        self.seal: SubjectSeal | None = None
        self.subject: str | None = None
        """The run's data subject: its subgraphs' child runs name it too."""
        self.closed = False
        self.loaded = False
        """The run's committed state was read; until then a failure must not touch the
        run's recorded step or status (it would rewind a run that could not be read)."""
        self.origin: ForkOrigin | None = None
        """Set for a fork: its effects run under the fork's effect mode (travel.py)."""
        self.creating: RunCreation | None = None
        """A new run's row, created by the commit of its input step (one transaction)."""
        self.step_events = True
        """Whether the driver reads each step's ``updates`` and ``values`` events: ``invoke``
        and workers read none, so the loop does not build them (3% of a step's time)."""
        self.invocation = Invocation(node_finished=node_finished(config))
        """What this invocation hands its nodes: runtime context, ``previous``, streams."""
        self._memory: RunMemory | None = None
        self.sleeping_until: float | None = None
        """The run suspended on durable timers only, due at this time (``invoke`` waits
        for it and continues; a worker leaves it to the claim query)."""
        self.as_finished = False
        """Stream each task's update in the order the tasks finished (the async driver,
        as LangGraph): coroutines that finish together finish in the order they started,
        so the order is reproducible; threads racing would not be, so the sync driver
        streams them in fold order."""
        self.step_nodes: set[str] = set()
        """The nodes of the step ``after_step`` ended: those that ran now and those that
        had finished before it was interrupted (``interrupt_after`` looks at them all)."""
        self.streamed: set[str] = set()
        """Tasks of this step whose update was streamed as they finished (a live stream,
        ``update_event``): ``after_step`` does not stream them again."""
        self.held: list[TaskSpec] = []
        """Deferred tasks this step holds back (``_runnable``)."""
        self.ended = False
        """An expiry ended the run (``OnExpire.fail``): no step runs."""
        self.breaks_before: frozenset[str] = frozenset()
        """This invocation's ``interrupt_before`` (an error handler's name pauses a step
        before that handler runs: ``held_before_handler``)."""

    @property
    def sink(self) -> CommitSink:
        """Where this invocation's commits go (exists from ``begin`` to ``close``)."""
        if self._sink is None:
            raise RuntimeError("the run loop has not begun, or has closed")
        return self._sink

    @property
    def pending(self) -> dict[str, TaskResult]:
        """Writes of tasks of the unfinished step that finished (drivers show them)."""
        return self.unfinished.pending

    # -- lifecycle --------------------------------------------------------------------

    def begin(self, input: Any) -> Iterator[Event]:
        try:
            yield from self._begin(input)
        except RunExistsError:  # another process started the run since it was read: read
            if self._sink is not None:  # it again and continue it as any existing run
                self._sink.close()  # (nothing of this start was written)
            self._sink, self.token, self.seal = None, 0, None
            yield from self._begin(input)

    def _begin(self, input: Any) -> Iterator[Event]:
        g = self.graph
        run = self.claimed_run or self.store.get_run(self.tenant_id, self.run_id)
        if run is None:
            if not _starts_a_run(input):  # else a row no worker could ever start
                raise ResumeError(
                    f"there is no run {self.run_id!r} (tenant {self.tenant_id!r}) to continue "
                    "or resume: start it with an input first; nothing was created"
                )
            run = self._new_run()
        if run.graph_name != g.name or run.graph_version != g.version:
            raise VersionMismatchError(
                f"run {self.run_id!r} was written by {run.graph_name}@{run.graph_version}, "
                f"this graph is {g.name}@{g.version}: resume it on its own version (workers "
                "serve versions side by side) or carry it forward with "
                "Wayline(store).migrate(run_id, old_graph, new_graph); nothing was changed"
            )
        check_identity(run, g)
        self.incarnation = run.incarnation
        if is_fork(run):  # an ordinary run's start reads no audit log
            self.origin = load_origin(self.store, self.tenant_id, self.run_id)
        self.subject = run.subject
        if run.subject and run.classes:  # classified values sealed under the subject's keys
            self.seal = SubjectSeal(self.store, self.tenant_id, run.subject, run.classes)
        if not self.claimed and self.creating is None:
            self.token = self.store.claim(
                self.tenant_id,
                self.run_id,
                owner=self.owner,
                lease_seconds=self.lease_seconds,
                steal=True,
            )
            self.claimed = True
        self._sink = make_sink(
            self.durability,
            self.store,
            self.tenant_id,
            self.run_id,
            self.token,
            max_lag_steps=g.max_lag_steps,
            max_lag_ms=g.max_lag_ms,
            committer=self.committer,
        )
        started = time.perf_counter()
        rec = reconstruct(
            self.store, self.codec, g.new_channels(), self.tenant_id, self.run_id, run.step
        )
        if run.step >= 0:  # a new run's start reads nothing: not a read to time
            observe_read(g.name, self.tenant_id, started, rec.folds, recovery=run.taken_over)
        self.channels, self.next_tasks, self.step = rec.channels, rec.next_tasks, rec.step
        self.log_keys = frozenset(k for k, c in rec.channels.items() if c.is_log)
        self.logs = rec.logs
        self.snapshots.resume(rec.snapshot_step, rec.folds, rec.bytes_read)
        missing = sorted({t.name for t in self.next_tasks} - set(g.nodes))
        if missing:
            raise VersionMismatchError(
                f"run {self.run_id!r} is about to enter node(s) {missing}, which "
                f"{g.name}@{g.version} does not have (renamed or removed?): resume it on the "
                "code that wrote it, or register a new version with a migration; nothing was "
                "changed"
            )
        if run.step < 0:  # step 0 is the input's own: no task of it saves writes or asks
            self.unfinished = UnfinishedStep()
        else:
            self._load_unfinished_step()
        self.loaded = True
        _check_labels(g, run)
        blocked = sorted(set(run.redacted) - set(g.continue_without))
        if blocked:
            self.take_inbox = run.inbox is not None  # consumed: not claimed again for it
            raise RedactedRunError(
                f"run {self.run_id!r} had its {', '.join(blocked)} data erased, so its state "
                f"holds Redacted tombstones for {', '.join(blocked)} channels and it cannot "
                "continue as it ran; read it with get_state, or compile the graph with "
                f"continue_without={blocked!r} if its nodes handle Redacted values; nothing "
                "was changed"
            )
        if input is None and run.inbox is not None:  # a start or resume handed to workers
            input = decode_inbox(self.codec, run.inbox)
            self.take_inbox = True
        if input is None and self.unfinished.interrupts:
            yield from self._wake()
        if isinstance(input, Command):
            if input.resume is not None:
                self._resolve(input.resume)
            if input.update is not None or input.goto:
                update, goto = split_output(input, START)
                yield from self._input_step(update, goto)
        elif input is not None:
            yield from self._input_step(input, [])
        elif not self.next_tasks and run.step < 0:
            raise ResumeError(
                f"run {self.run_id!r} has no input yet: pass an input to invoke, not None"
            )

    def _new_run(self) -> RunRecord:
        """The row of a run this invocation starts, as the commit of its input step will
        insert it, in that step's transaction: no commit of its own, and no row left behind
        by a process that dies before its input is durable. (A loop handed a token, a
        fork's, finds no row only if it was removed meanwhile: it is created as it was.)"""
        g = self.graph
        subject = _subject(self.config)
        if self.claimed:
            return self.store.create_run(
                self.tenant_id,
                self.run_id,
                graph_name=g.name,
                graph_version=g.version,
                durability=self.durability,
                schema_version=g.schema_version,
                subject=subject,
                classes=g.schema.classes,
                fingerprint=g.fingerprint,
                shape=g.shape_json,
            )
        self.creating = RunCreation(
            g.name,
            g.version,
            self.durability,
            self.owner,
            self.lease_seconds,
            schema_version=g.schema_version,
            subject=subject,
            classes=dict(g.schema.classes),
            fingerprint=g.fingerprint,
            shape=g.shape_json,
        )
        run = self.creating.record(self.tenant_id, self.run_id, time.time())
        self.token = run.fencing_token
        return run

    def close(self, error: BaseException | None) -> None:
        """Make what was submitted durable (exit mode: now), then give the lease up, on
        every path out: finished, failed, refused or unreadable."""
        if self.closed:
            return
        self.closed = True
        if isinstance(error, LeaseLost) or not self.claimed:
            return
        try:
            if self._sink is not None:
                if error is not None and (not self.loaded or isinstance(error, CorruptionError)):
                    self._note_unreadable(error)
                elif isinstance(error, ResumeError) and (self.take_inbox or self.step < 0):
                    self._refuse_inbox(error)
                # A refused resume changed nothing, and a parked run has its status already.
                elif error is not None and not isinstance(
                    error,
                    GraphInterrupt
                    | ResumeError
                    | RunParkedError
                    | VersionMismatchError
                    | ParentCommand
                    | GraphDrained,
                ):
                    self._submit_status("failed", error=_describe(error))
                self.sink.close()
        finally:
            released = self._sink is not None and self._sink.released
            self._sink = None
            if not released:  # a settled run's last commit gave the lease up already
                self.store.release(self.tenant_id, self.run_id, self.token)

    def _refuse_inbox(self, error: ResumeError) -> None:
        """A worker was handed input that does not fit the run (a resume with no question
        open, nothing to start): consume it and say why, leaving the run as its committed
        state says it is, so it is not claimed again for the same refusal."""
        if self.step < 0:
            status: RunStatus = "failed"  # it cannot start: nothing was ever committed
        elif not self.next_tasks:
            status = "done"
        elif any(i.resume is None for i in self.unfinished.interrupts):
            status = "interrupted"
        else:
            status = "running"
        self._submit_status(status, error=_describe(error))

    def _note_unreadable(self, error: BaseException) -> None:
        """The run's committed state could not be read (a corrupt row, a type this process
        does not know, missing keys): record why beside it, leaving its step and status
        as they are, so once the cause is fixed it continues from its last step."""
        if isinstance(error, VersionMismatchError | ResumeError):
            return  # refused on purpose, with nothing changed: not an error of the run
        # If the store is what failed, the error itself still propagates to the caller.
        with contextlib.suppress(Exception):
            self.store.note_error(
                self.tenant_id, self.run_id, token=self.token, error=_describe(error)
            )

    # -- stepping ---------------------------------------------------------------------

    def next_step(self) -> list[ExecTask] | None:
        """Tasks of the next superstep, or None when the run has finished or stopped."""
        if self.raised or self.halted or not self.next_tasks or self.ended:
            return None
        control = self.invocation.control
        if control is not None and control.drain_requested:
            self.sink.flush()
            raise GraphDrained(
                f"run {self.run_id!r} drained ({control.drain_reason}) before step "
                f"{self.step + 1}; its steps are committed: invoke(None, config) continues it",
                reason=control.drain_reason or "shutdown",
            )
        if self.stop is not None and self.stop.is_set():
            if self.cancelled:
                self._submit_status("cancelled", error="cancelled by request")
            return None  # shutting down: the run stays runnable for the next claim
        if self.steps_run >= self.step_limit:
            raise GraphRecursionError(
                f"run {self.run_id!r} reached its limit of {self.step_limit} supersteps at step "
                f"{self.step} without finishing; its steps are committed. Resume it with "
                "invoke(None, config) and a larger config['recursion_limit'] if it is meant to "
                "run longer"
            )
        step = self.step + 1
        tasks = []
        for spec in self._runnable():
            task = self.task_for(spec, step)
            if task is not None:
                tasks.append(task)
        self.multi_task_step = len(self.next_tasks) > 1
        return tasks

    def _runnable(self) -> list[TaskSpec]:
        """The next tasks that run this step; deferred ones wait (``defer_split``), and
        this step's commit routes to them again (``DEFER``), so the wait is in the step's
        delta and replays as it ran."""
        run, self.held = defer_split(self.next_tasks, self.graph.nodes)
        return run

    def after_step(self, outcomes: list[TaskOutcome]) -> Iterator[Event]:
        self.step_nodes = {o.task.spec.name for o in outcomes}
        self.step_nodes.update(o.handler for o in outcomes if o.handler is not None)
        self.step_nodes.update(r.name for r in self.unfinished.pending.values())
        ordered = sorted(outcomes, key=lambda o: fold_order(o.task.spec.path))
        done = [o for o in ordered if o.result is not None]
        if self.step_events:  # the fold keeps fold order, whatever order events go in
            for o in (o for o in outcomes if o.result is not None) if self.as_finished else done:
                if o.task.id not in self.streamed:
                    yield self.update_event(o)
        self.streamed.clear()
        errors = [o for o in ordered if o.error is not None]
        asked = [o for o in ordered if o.interrupts]
        paused = any(o.paused for o in ordered)
        if errors or asked or paused:
            self._save_pending(done)
            if errors:
                error = errors[0].error
                assert error is not None
                if isinstance(error, CorruptionError):  # the store, not the node, failed
                    self.sink.flush()
                    raise error
                if isinstance(error, EffectOutcomeUnknown):
                    parked = RunParkedError(self.run_id, error.key, error.reason)
                    self._submit_status("parked", error=str(parked))
                    self.sink.flush()
                    raise parked
                failures = [
                    failure(
                        self.tenant_id,
                        self.run_id,
                        o.task.step,
                        o.task.id,
                        o.task.spec.name,
                        o.error,
                        self.owner,
                    )
                    for o in errors
                    if o.error is not None and not isinstance(o.error, asyncio.CancelledError)
                ]  # as LangGraph's tasks show them: each failed task with its error
                self._submit_status("failed", error=_describe(error), audit=failures)
                self.sink.flush()
                raise error
            if asked:
                yield from self._suspend(asked)
            else:  # only a subgraph's breakpoint: wait with it, as at a breakpoint
                self.pause()
                self.halted = True
                yield ("updates", {"__interrupt__": ()})
            return
        results = dict(self.unfinished.pending)
        results.update((o.task.id, o.result) for o in done if o.result is not None)
        if self.held:  # deferred nodes wait for a step without other tasks
            routes = tuple((ROUTE, t.name) for t in self.held)
            results[DEFER] = TaskResult(DEFER, (PULL, DEFER), routes)
        alone = done[0].folded if len(results) == 1 and len(done) == 1 else None
        memory = [w for o in done if o.task.id not in self.unfinished.saved for w in o.memory]
        self._commit_step(list(results.values()), alone, memory)
        self.steps_run += 1
        if self.step_events:
            yield ("values", self.values())

    def update_event(self, o: TaskOutcome) -> Event:
        """The ``updates`` event of a task that finished with a result."""
        update = streamed_update(self.graph.schema, o.update)
        if o.cached:  # as LangGraph: a cached output says so
            return ("updates", {o.task.spec.name: update, "__metadata__": CACHED})
        return ("updates", {o.handler or o.task.spec.name: update})

    def cached_events(self) -> Iterator[Event]:
        """The updates of tasks of the step about to run that finished before (an
        interrupt or a crash stopped the step), streamed first as LangGraph does: what the
        task wrote to the state's keys, marked cached."""
        if not self.step_events:
            return
        for result in sorted(self.unfinished.pending.values(), key=lambda r: fold_order(r.path)):
            if result.name not in self.graph.nodes:
                continue
            update = {k: v for k, v in result.writes if k in self.graph.schema.channels}
            yield ("updates", {result.name: update or None, "__metadata__": CACHED})

    def stream_finished(self, o: TaskOutcome) -> Event | None:
        """On a live stream (one where a step's tasks emit while they run), a task's update
        goes out when the task finishes, as in LangGraph, so that it comes before what its
        peers emit later; ``after_step`` then skips it."""
        if not self.step_events or o.result is None:
            return None
        self.streamed.add(o.task.id)
        return self.update_event(o)

    @property
    def finished(self) -> bool:
        return not self.next_tasks and not self.raised and not self.halted and self.step >= 0

    def values(self) -> dict[str, Any]:
        return values_of(self.channels)

    # -- internals --------------------------------------------------------------------

    def _load_unfinished_step(self) -> None:
        step = self.step + 1
        pending = {}
        resolve = BlobCache(self.store, self.tenant_id)
        for rec in self.store.load_pending(self.tenant_id, self.run_id, step):
            row = ("pending_writes", self.tenant_id, self.run_id, step, rec.task_id)
            (result,) = decode_results(self.codec, rec.payload, resolve, row)
            pending[rec.task_id] = result
        questions = self.store.load_interrupts(self.tenant_id, self.run_id, step)
        self.unfinished = UnfinishedStep(pending, set(pending), questions)

    def _resolve(self, resume: Any) -> None:
        """Record answers to pending interrupts durably before any node sees them."""
        questions = self.unfinished.interrupts
        open_ = [i for i in questions if i.resume is None]
        resolved = answer(self.run_id, open_, resume, self.codec)
        batch = CommitBatch(interrupts=resolved, take_inbox=self._taking_inbox())
        self.store.commit(self.tenant_id, self.run_id, self.token, batch)
        done = {r.interrupt_id for r in resolved}
        self.unfinished.interrupts = [i for i in questions if i.interrupt_id not in done]
        self.unfinished.interrupts.extend(resolved)

    def _wake(self) -> Iterator[Event]:
        """Take what the expired timers and approvals of the waiting step declared
        (``wakeups.due``), durably before any node runs: answered, failed, or gone to a
        node. A second claim finds them answered, so nothing wakes twice."""
        woken = due(self.tenant_id, self.run_id, self.unfinished.interrupts, self.codec)
        if not woken:
            return
        if woken.goto is not None and woken.goto not in self.graph.nodes:
            woken.fail = f"on_expire goto names node {woken.goto!r}, which the graph lacks"
        if woken.fail is not None:
            nodes = tuple(t.name for t in self.next_tasks)
            self.sink.submit(
                CommitBatch(
                    audit=woken.audit,
                    run=RunUpdate("failed", self.step, nodes, error=woken.fail),
                    wake=Wake(None),
                )
            )
            self.sink.flush()
            self.ended = True
            return
        if woken.goto is not None:  # the waiting step is left for the node, and only it
            self.sink.submit(CommitBatch(audit=woken.audit))
            self.unfinished.discard()
            writes = route_writes([woken.goto], self.graph.nodes, START)
            self._commit_step([TaskResult(START, (PULL, START), tuple(writes))])
            self.sink.flush()
            yield ("values", self.values())
            return
        batch = CommitBatch(interrupts=woken.answers, audit=woken.audit)
        self.store.commit(self.tenant_id, self.run_id, self.token, batch)
        done = {r.interrupt_id for r in woken.answers}
        kept = [i for i in self.unfinished.interrupts if i.interrupt_id not in done]
        self.unfinished.interrupts = [*kept, *woken.answers]

    def _input_step(self, update: Any, goto: list[Any]) -> Iterator[Event]:
        """New input (or a Command's update/goto) is a superstep of its own, run by START."""
        schema = self.graph.schema
        as_dict = schema.input_to_dict(update)
        if self.invocation.namespace:  # a subgraph's input is its parent's state, which it
            as_dict = {k: v for k, v in as_dict.items() if k in schema.channels}  # reads
        else:  # through its own schema (as LangGraph); a caller's typo is refused
            schema.check_keys(as_dict, "the input")
        keys = self.graph.builder.input_keys or (schema.own if schema.kind != "dict" else None)
        if keys is not None and not goto:  # as LangGraph: input is read through its schema
            as_dict = {k: v for k, v in as_dict.items() if k in keys}
        writes = list(as_dict.items())
        writes.extend(self._routing(START, writes, goto)[0])
        self.unfinished.discard()  # new input replaces an unfinished step, questions and all
        self._commit_step([TaskResult(START, (PULL, START), tuple(writes))])
        self.input_at = self.step
        self.sink.flush()  # the input is durable in every mode, so any process can resume
        yield ("values", self.values())

    def update(self, values: Any, as_node: str | None) -> None:
        """``update_state``: a step of its own that writes ``values`` through the reducers.

        As ``as_node``, the step routes as that node would (its edges, its branches on the
        new state); without it, the run goes on to the tasks it was about to run. Either way
        an unfinished step (saved writes, open questions) is discarded and runs again.
        """
        self.update_many([(values, as_node)])

    def update_many(self, updates: Sequence[tuple[Any, str | None]]) -> None:
        """One step of several updates (``bulk_update_state``'s superstep): each writes as
        its ``as_node`` would; their writes fold together, as parallel nodes' do."""
        results: list[TaskResult] = []
        for update, as_node in updates:
            if as_node == END:  # as LangGraph: the tasks end; those that ran keep their writes
                results.extend(self.unfinished.pending.values())
                results.append(TaskResult(END, (PULL, END), ()))
                continue
            values, goto = split_output(update, as_node or UPDATE)
            writes = list(self.graph.schema.input_to_dict(values).items())
            if goto and as_node is None:  # a Command(goto=...): there, not to the next tasks
                writes.extend(route_writes(goto, self.graph.nodes, UPDATE))
            elif as_node is None:
                writes.extend(
                    (ROUTE, t.name)
                    if t.path[0] == PULL
                    else (SEND, Send(t.name, t.arg, timeout=t.timeout))
                    for t in self.next_tasks
                )
            elif as_node == "__input__":  # as the input: routed from START
                writes.extend(self._routing(START, writes, goto)[0])
            else:  # as the node returned it: its edges and branches, and a Command's goto
                writes.extend(self._routing(as_node, writes, goto)[0])
            name = as_node or UPDATE
            results.append(TaskResult(name, (PULL, name), tuple(writes)))
        self.unfinished.discard()
        self._commit_step(results)
        self.sink.flush()

    def _routing(
        self, name: str, writes: list[tuple[str, Any]], goto: list[Any]
    ) -> tuple[list[tuple[str, Any]], dict[str, Channel] | None]:
        """The routing writes of ``name`` after ``writes``, and the staged channels its
        branches read (None without branches)."""
        g = self.graph
        targets: list[Any] = list(g.static_edges.get(name, ()))
        routing = [(key, name) for key in g.joins_from.get(name, ())]
        branches = g.branches.get(name, ())
        local = None
        if branches:  # a branch sees the state before the step plus this node's own writes
            local = staged_copy(self.channels, (k for k, _ in writes), self.graph.barriers)
            fold_writes(local, writes)
            values = with_managed(self, values_of(local))
            state = g.schema.to_node_input(values)
            for branch in branches:
                arg = (
                    state
                    if branch.input_schema is None
                    else g.schema.as_input(values, branch.input_schema)
                )
                injected = router_args(self, branch.inject) if branch.inject else {}
                targets.extend(branch.resolve(branch.route(arg, **injected), name))
        targets.extend(goto)
        routing.extend(route_writes(targets, g.nodes, name))
        return routing, local


def _starts_a_run(input: Any) -> bool:
    """Whether ``input`` can begin a run that does not exist yet: new input, or a Command
    that writes or routes; not None and not a bare resume."""
    if isinstance(input, Command):
        return input.update is not None or bool(input.goto)
    return input is not None


def _describe(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}"
