"""The run loop: the I/O shell around the pure fold, shared by the sync and async drivers.

A driver asks ``next_step`` for tasks, runs them (threads or coroutines: the only part that
differs), hands each outcome to ``task_done`` and the step to ``after_step``. Everything
that touches the store or decides what happens next lives here, once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wayline.effects.ledger import EffectLedger
from wayline.effects.replay import replay_ledger
from wayline.errors import (
    CodecError,
    CorruptionError,
    EffectOutcomeUnknown,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    LeaseLost,
    NodeError,
    ParentCommand,
    RedactedRunError,
    ResumeError,
    RunExistsError,
    RunParkedError,
    VersionMismatchError,
)
from wayline.graph import probe
from wayline.graph.algo import (
    PULL,
    ROUTE,
    SEND,
    TaskResult,
    TaskSpec,
    apply_step,
    derive_id,
    fold_order,
    fold_writes,
    sorted_results,
    values_of,
)
from wayline.graph.calling import Invocation, node_call, with_managed
from wayline.graph.channels import Channel
from wayline.graph.checkpoint import (
    BlobCache,
    decode_inbox,
    decode_results,
    encode_results,
    reconstruct,
    state_digest,
    write_snapshot,
)
from wayline.graph.context import NodeContext, TaskScope, is_scoped
from wayline.graph.identity import check_identity
from wayline.graph.interrupts import Asked, UnfinishedStep, answer, ask
from wayline.graph.node import route_writes, split_output
from wayline.graph.schema import streamed_update
from wayline.graph.segments import LogIndex
from wayline.graph.snapshot_policy import SnapshotPolicy
from wayline.graph.travel import ForkOrigin, is_fork, load_origin
from wayline.graph.types import START, Command, Interrupt, Send
from wayline.graph.wakeups import due, wake_time
from wayline.ids import RunRef
from wayline.memory.step import RunMemory
from wayline.store.memory_records import MemoryWrite
from wayline.store.records import (
    BlobRecord,
    CommitBatch,
    DeltaRecord,
    PendingWriteRecord,
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

UPDATE = "__update__"
"""The node name of a step written by ``update_state`` without ``as_node``."""


@dataclasses.dataclass(slots=True)
class ExecTask:
    spec: TaskSpec
    id: str
    step: int
    scope: TaskScope
    ctx: NodeContext


@dataclasses.dataclass(frozen=True, slots=True)
class Folded:
    """A task's state writes already folded into staged channels, for its branches to
    read. A step of that task alone commits these channels, folding only the rest of its
    writes (routes, sends, joins: no key of them is a state key) instead of folding every
    write a second time."""

    channels: dict[str, Channel]
    rest: list[tuple[str, Any]]


@dataclasses.dataclass(slots=True)
class TaskOutcome:
    task: ExecTask
    result: TaskResult | None = None
    update: Any = None
    error: BaseException | None = None
    interrupts: tuple[tuple[int, Interrupt], ...] = ()
    folded: Folded | None = None
    paused: bool = False
    """The task's subgraph stopped at a breakpoint of its own: the step waits, asking
    nothing, until the run is continued."""
    memory: list[MemoryWrite] = dataclasses.field(default_factory=list)
    """The task's long-term memory writes: they commit with its writes, never before."""


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


class RunLoop:
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
        self.invocation = Invocation()
        """What this invocation hands its nodes: runtime context, ``previous``, streams."""
        self._memory: RunMemory | None = None
        self.sleeping_until: float | None = None
        """The run suspended on durable timers only, due at this time (``invoke`` waits
        for it and continues; a worker leaves it to the claim query)."""
        self.ended = False
        """An expiry ended the run (``OnExpire.fail``): no step runs."""

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
        rec = reconstruct(
            self.store, self.codec, g.new_channels(), self.tenant_id, self.run_id, run.step
        )
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
                f"{self.step + 1}; its steps are committed: invoke(None, config) continues it"
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
        for spec in self.next_tasks:
            task_id = derive_id(self.tenant_id, self.run_id, step, *spec.path)
            if task_id in self.unfinished.pending:
                continue  # finished before a crash or an interrupt: its writes are kept
            by_id: dict[str, Any] = {}
            resume: list[Any] = []
            if self.unfinished.interrupts:  # answers to this task's questions, if any
                answers = self.unfinished.answers_for(task_id)
                values = [self.codec.loads(i.resume) for i in answers if i.resume is not None]
                by_id = {i.interrupt_id: v for i, v in zip(answers, values, strict=True)}
                # interrupt() in the node itself answers by position; a question its
                # subgraph or @task asked is recorded at a scoped index and answered by id
                resume = [v for i, v in zip(answers, values, strict=True) if not is_scoped(i.idx)]
            ledger = EffectLedger(
                self.store,
                self.codec,
                tenant_id=self.tenant_id,
                run_id=self.run_id,
                token=self.token,
                node=spec.name,
                step=step,
                task_id=task_id,
                incarnation=self.incarnation,
                committer=self.committer,
            )
            if self.origin is not None:  # a fork: original outcomes, substitutes or live
                ledger = replay_ledger(ledger, self.origin, spec.path, self.config)
            ctx = NodeContext(
                self.run_id, self.tenant_id, spec.name, step, task_id, self.config, ledger
            )
            scope = TaskScope(task_id, resume, answers=by_id)
            tasks.append(ExecTask(spec, task_id, step, scope, ctx))
        self.multi_task_step = len(self.next_tasks) > 1
        return tasks

    def memory_view(self, scope: TaskScope) -> Any:
        """The long-term memory store a task sees (``wayline.memory.step``), or None."""
        if self.graph.memory_store is None:
            return None
        if self._memory is None:
            self._memory = RunMemory(
                self.graph.memory_store, self.store, self.tenant_id, durability=self.durability
            )
            self._memory.subject = self.subject
        ctx = scope.config  # a @task's scope carries its node's context: its writes are the node's
        if isinstance(ctx, NodeContext):
            return self._memory.view(ctx.task_id, ctx.node, ctx.step)
        return self._memory.view(scope.task_id, scope.node, self.step + 1)

    def node_call(self, task: ExecTask) -> tuple[Any, tuple[Any, ...]]:
        """The callable and arguments for a task; the driver calls them in the task scope."""
        call = node_call(self, task)
        probe.emit("task_start", self.tenant_id, self.run_id, task.step, task.spec.name, task.id)
        return call

    def handler_call(
        self, task: ExecTask, exc: Exception
    ) -> tuple[Any, tuple[Any, ...], bool] | None:
        """The node's error handler for a failure (None: it has none): the callable, its
        arguments, and whether it is a coroutine function."""
        handler = self.graph.nodes[task.spec.name].error_handler
        if handler is None:
            return None
        task.scope.error = NodeError(task.spec.name, exc)
        fn, args = node_call(self, task, handler)
        return fn, args, handler.is_async

    def outcome(self, task: ExecTask, output: Any) -> TaskOutcome:
        """Turn a node's return value into its writes, routing included (runs branches)."""
        name = task.spec.name
        probe.emit("task_finish", self.tenant_id, self.run_id, task.step, name, task.id)
        update, goto = split_output(output, name)
        # a list of Commands gives a list of updates; a list a node returns is one value
        updates = update if isinstance(update, list) and update is not output else [update]
        writes: list[tuple[str, Any]] = []
        schema = self.graph.schema
        for part in updates:
            as_dict = schema.input_to_dict(part)
            schema.check_keys(as_dict, f"node {name!r}")
            writes.extend(as_dict.items())
        routing, local = self._routing(name, writes, goto)
        folded = None if local is None else Folded(local, routing)
        result = TaskResult(name, task.spec.path, (*writes, *routing))
        memory = self._memory.take(task.id) if self._memory is not None else []
        return TaskOutcome(task, result, update, folded=folded, memory=memory)

    def failed(self, task: ExecTask, exc: BaseException) -> TaskOutcome:
        if isinstance(exc, GraphInterrupt):
            first = task.scope.counter - 1
            # A subgraph's node re-raises its child's questions with indexes of their own.
            idxs = exc.indexes or [first] * len(exc.interrupts)
            if not exc.interrupts:  # a subgraph's own breakpoint
                return TaskOutcome(task, paused=True)
            return TaskOutcome(task, interrupts=tuple(zip(idxs, exc.interrupts, strict=True)))
        return TaskOutcome(task, error=exc)

    def retry_delay(self, task: ExecTask, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before running a failed task again, or None to give up; the
        task starts over with the same interrupt indexes and effect keys."""
        policy = self.graph.nodes[task.spec.name].retry
        if policy is None or not policy.should_retry(attempt, exc):
            return None
        task.scope.counter = 0
        task.scope.calls = 0  # subgraph calls and @task calls get the same keys again
        task.scope.task_calls.clear()
        if self._memory is not None:  # the failed attempt's memory writes are dropped
            self._memory.discard(task.id)
        if task.ctx.ledger is not None:
            task.ctx.ledger.restart()
        return policy.delay(attempt)

    def task_done(self, outcome: TaskOutcome) -> None:
        """Save a finished peer's writes as it finishes (invariant 5): durable at once in
        sync mode, within the writer's lag bound in async mode. Exit mode keeps nothing
        until the run stops, by definition."""
        if outcome.result is None or not self.multi_task_step or self.durability == "exit":
            return
        try:
            self._save_pending([outcome])
        except CodecError as exc:  # its own writes cannot be stored: this task failed, and
            outcome.result, outcome.error = None, exc  # the peers still finish and save

    def after_step(self, outcomes: list[TaskOutcome]) -> Iterator[Event]:
        ordered = sorted(outcomes, key=lambda o: fold_order(o.task.spec.path))
        done = [o for o in ordered if o.result is not None]
        if self.step_events:
            for o in done:
                yield ("updates", {o.task.spec.name: streamed_update(self.graph.schema, o.update)})
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
                self._submit_status("failed", error=_describe(error))
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
        alone = done[0].folded if len(results) == 1 and len(done) == 1 else None
        memory = [w for o in done if o.task.id not in self.unfinished.saved for w in o.memory]
        self._commit_step(list(results.values()), alone, memory)
        self.steps_run += 1
        if self.step_events:
            yield ("values", self.values())

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
        results = []
        for values, as_node in updates:
            writes = list(self.graph.schema.input_to_dict(values).items())
            if as_node is None:
                writes.extend(
                    (ROUTE, t.name) if t.path[0] == PULL else (SEND, Send(t.name, t.arg))
                    for t in self.next_tasks
                )
            elif as_node == "__input__":  # as the input: routed from START
                writes.extend(self._routing(START, writes, [])[0])
            else:
                writes.extend(self._routing(as_node, writes, [])[0])
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
            local = _staged(self.channels, (k for k, _ in writes), self.graph.barriers)
            fold_writes(local, writes)
            values = with_managed(self, values_of(local))
            state = g.schema.to_node_input(values)
            for branch in branches:
                arg = (
                    state
                    if branch.input_schema is None
                    else g.schema.as_input(values, branch.input_schema)
                )
                targets.extend(branch.resolve(branch.route(arg), name))
        targets.extend(goto)
        routing.extend(route_writes(targets, g.nodes, name))
        return routing, local

    def _commit_step(
        self,
        results: list[TaskResult],
        folded: Folded | None = None,
        memory: list[MemoryWrite] | None = None,
    ) -> None:
        ordered = sorted_results(results)
        step = self.step + 1
        threshold = self.graph.blob_threshold
        enc = encode_results(self.codec, ordered, step=step, threshold=threshold, seal=self.seal)
        if folded is not None:  # the step's one task: its state writes are folded already
            staged = folded.channels
            next_tasks = fold_writes(staged, folded.rest)
        else:
            written = (k for r in ordered for k, _ in r.writes)
            staged = _staged(self.channels, written, self.graph.barriers)
            next_tasks = apply_step(staged, ordered)  # a failing reducer leaves self.channels
        finished = not next_tasks
        batch = CommitBatch(
            deltas=[DeltaRecord(step, enc.payload, enc.channels)],
            blobs=enc.blobs,
            take_inbox=self._taking_inbox(),
            clear_pending_through=step if self.unfinished.rows_to_clear() else None,
            run=RunUpdate(
                status="done" if finished else "running",
                step=step,
                next_nodes=tuple(t.name for t in next_tasks),
                state_digest=state_digest(self.codec, staged) if finished else None,
            ),
            memory=memory or [],
        )
        logs = self.logs
        if self.snapshots.due(step, len(enc.payload), enc.channels, self.log_keys):
            logs = write_snapshot(
                batch,
                self.codec,
                staged,
                next_tasks,
                logs,
                step=step,
                threshold=threshold,
                seal=self.seal,
            )
            self.snapshots.taken(step, len(batch.snapshots[-1].payload))
        if self.creating is None:
            self.sink.submit(batch)
        else:  # a new run's input step: its row goes in with it, held from then on
            batch.create, self.creating = self.creating, None
            self.sink.commit_now(batch)
            self.claimed = True
        self.channels, self.next_tasks, self.step, self.logs = staged, next_tasks, step, logs
        self.unfinished.committed()

    def _save_pending(self, outcomes: list[TaskOutcome]) -> None:
        records = []
        blobs: list[BlobRecord] = []
        memory: list[MemoryWrite] = []
        for o in outcomes:
            if o.result is None or o.task.id in self.unfinished.saved:
                continue
            memory.extend(o.memory)
            enc = encode_results(
                self.codec,
                [o.result],
                step=o.task.step,
                threshold=self.graph.blob_threshold,
                seal=self.seal,
            )
            records.append(PendingWriteRecord(o.task.step, o.task.id, enc.payload, enc.channels))
            blobs.extend(enc.blobs)
            self.unfinished.saved.add(o.task.id)
            self.unfinished.pending[o.task.id] = o.result
        if records:
            self.sink.submit(CommitBatch(pending=records, blobs=blobs, memory=memory))

    def _suspend(self, outcomes: list[TaskOutcome]) -> Iterator[Event]:
        asked = [Asked(o.task.step, o.task.id, o.task.spec.name, o.interrupts) for o in outcomes]
        records, audit, raised = ask(
            self.tenant_id, self.run_id, asked, self.unfinished.interrupts, self.codec
        )
        wake = wake_time(records)
        sleeping = all(r.timer for r in records)  # nobody is asked: it waits for a time
        self.sink.submit(
            CommitBatch(
                interrupts=records,
                audit=audit,
                run=RunUpdate(
                    "pending" if sleeping else "interrupted",
                    self.step,
                    tuple(t.name for t in self.next_tasks),
                ),
                take_inbox=self._taking_inbox(),
                wake=Wake(wake),
            )
        )
        self.sink.flush()
        self.sleeping_until = wake if sleeping else None
        self.raised = raised
        if sleeping:
            return  # nobody is asked: no interrupt to report, only a time to wait for
        yield ("updates", {"__interrupt__": self.raised})
        yield ("values", {**self.values(), "__interrupt__": self.raised})  # as LangGraph

    def pause(self) -> None:
        """Stop at a breakpoint (``interrupt_before``/``interrupt_after``): the run waits,
        interrupted, with its next tasks unchanged; ``invoke(None, config)`` continues it."""
        nodes = tuple(t.name for t in self.next_tasks)
        self.sink.submit(
            CommitBatch(
                run=RunUpdate("interrupted", self.step, nodes),
                take_inbox=self._taking_inbox(),
                wake=Wake(None),  # only a person continues it
            )
        )
        self.sink.flush()

    def _submit_status(self, status: RunStatus, *, error: str | None = None) -> None:
        nodes = tuple(t.name for t in self.next_tasks)
        self.sink.submit(
            CommitBatch(
                run=RunUpdate(status, self.step, nodes, error=error),
                take_inbox=self._taking_inbox(),
            )
        )

    def _taking_inbox(self) -> bool:
        """Whether this commit is the one that consumes the applied inbox (only the first)."""
        taking, self.take_inbox = self.take_inbox, False
        return taking


def _staged(
    channels: dict[str, Channel], written: Iterable[str], barriers: Iterable[str]
) -> dict[str, Channel]:
    """A copy of ``channels`` to fold into, copying only what the fold can change (written
    channels and the graph's join barriers); the live channels stay as they were if the
    fold fails."""
    staged = dict(channels)
    for key in (*written, *barriers):
        if key in channels and staged[key] is channels[key]:
            staged[key] = channels[key].copy()
    return staged


def _starts_a_run(input: Any) -> bool:
    """Whether ``input`` can begin a run that does not exist yet: new input, or a Command
    that writes or routes; not None and not a bare resume."""
    if isinstance(input, Command):
        return input.update is not None or bool(input.goto)
    return input is not None


def _describe(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}"
