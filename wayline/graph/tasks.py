"""One task of a superstep: what the loop hands a driver (``ExecTask``), what comes back
(``TaskOutcome``), and the loop's judgement of each attempt: its call, its writes and
routing, a failure, a retry, an error handler."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wayline.effects.ledger import EffectLedger
from wayline.effects.replay import replay_ledger
from wayline.effects.retry import RetryPolicy
from wayline.errors import CodecError, GraphInterrupt, NodeError
from wayline.graph import probe
from wayline.graph.algo import PULL, TaskResult, TaskSpec, derive_id
from wayline.graph.cache import FullKey, node_key
from wayline.graph.calling import node_call
from wayline.graph.channels import Channel
from wayline.graph.context import NodeContext, TaskScope, is_scoped
from wayline.graph.mixin import as_loop
from wayline.graph.node import split_output
from wayline.graph.run_config import node_config
from wayline.graph.types import Command, Interrupt
from wayline.memory.step import RunMemory
from wayline.metrics import timed_call
from wayline.store.memory_records import MemoryWrite

if TYPE_CHECKING:
    from wayline.graph.node import NodeSpec

__all__ = ["ExecTask", "Folded", "TaskOutcome", "TaskSteps", "defer_split", "node_delay"]

NODE_FAILED = "__node_failed__"
"""The task's ledger record of its node's failure, made before its error handler runs."""


class NodeFailedEarlier(RuntimeError):
    """What an error handler resumed after a crash is given as the error: the recorded
    text (``"RuntimeError: boom"``) of the failure, as LangGraph's deserialized error."""


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
    cached: bool = False
    """Its output came from the node cache (the node did not run)."""
    handler: str | None = None
    """The error handler node (``__error_handler__<node>``) whose output this is: streamed
    and paused after under that name, as LangGraph's handler task."""


class TaskSteps:
    """Mixed into ``RunLoop``: building and judging one task."""

    def task_for(self, spec: TaskSpec, step: int) -> ExecTask | None:
        """The task of ``spec`` at ``step`` (None: it finished before, its writes are kept)."""
        loop = as_loop(self)
        task_id = derive_id(loop.tenant_id, loop.run_id, step, *spec.path)
        if task_id in loop.unfinished.pending:
            return None  # finished before a crash or an interrupt: its writes are kept
        by_id: dict[str, Any] = {}
        resume: list[Any] = []
        if loop.unfinished.interrupts:  # answers to this task's questions, if any
            answers = loop.unfinished.answers_for(task_id)
            values = [loop.codec.loads(i.resume) for i in answers if i.resume is not None]
            by_id = {i.interrupt_id: v for i, v in zip(answers, values, strict=True)}
            # interrupt() in the node itself answers by position; a question its
            # subgraph or @task asked is recorded at a scoped index and answered by id
            resume = [v for i, v in zip(answers, values, strict=True) if not is_scoped(i.idx)]
        ledger = EffectLedger(
            loop.store,
            loop.codec,
            tenant_id=loop.tenant_id,
            run_id=loop.run_id,
            token=loop.token,
            node=spec.name,
            step=step,
            task_id=task_id,
            incarnation=loop.incarnation,
            committer=loop.committer,
        )
        if loop.origin is not None:  # a fork: original outcomes, substitutes or live
            ledger = replay_ledger(ledger, loop.origin, spec.path, loop.config)
        config = node_config(loop, spec.name, task_id)
        ctx = NodeContext(loop.run_id, loop.tenant_id, spec.name, step, task_id, config, ledger)
        scope = TaskScope(task_id, resume, answers=by_id)
        return ExecTask(spec, task_id, step, scope, ctx)

    def memory_view(self, scope: TaskScope) -> Any:
        """The long-term memory store a task sees (``wayline.memory.step``), or None."""
        loop = as_loop(self)
        if loop.graph.memory_store is None:
            return None
        if loop._memory is None:
            loop._memory = RunMemory(
                loop.graph.memory_store, loop.store, loop.tenant_id, durability=loop.durability
            )
            loop._memory.subject = loop.subject
        ctx = scope.config  # a @task's scope carries its node's context: its writes are the node's
        if isinstance(ctx, NodeContext):
            return loop._memory.view(ctx.task_id, ctx.node, ctx.step)
        return loop._memory.view(scope.task_id, scope.node, loop.step + 1)

    def node_call(self, task: ExecTask) -> tuple[Any, tuple[Any, ...]]:
        """The callable and arguments for a task; the driver calls them in the task scope."""
        loop = as_loop(self)
        call = node_call(loop, task)
        probe.emit("task_start", loop.tenant_id, loop.run_id, task.step, task.spec.name, task.id)
        is_async = loop.graph.nodes[task.spec.name].is_async
        return timed_call(call, loop.graph.name, task.spec.name, loop.tenant_id, is_async=is_async)

    def failed_before(self, task: ExecTask) -> Exception | None:
        """The failure an earlier execution of this task recorded before its node's error
        handler ran (the handler then crashed, or the process died): LangGraph resumes the
        handler, not the node. None: the node runs."""
        loop = as_loop(self)
        ledger = task.ctx.ledger
        if loop.graph.nodes[task.spec.name].error_handler is None or ledger is None:
            return None
        recorded = getattr(ledger, "recorded", None)  # a fork's replay ledger has none
        found, text = recorded(NODE_FAILED) if recorded is not None else (False, None)
        return NodeFailedEarlier(str(text)) if found else None

    def record_failure(self, task: ExecTask, exc: Exception) -> None:
        """Record that the node failed for good, before its error handler runs."""
        loop = as_loop(self)
        ledger = task.ctx.ledger
        if loop.graph.nodes[task.spec.name].error_handler is not None and ledger is not None:
            ledger.record(NODE_FAILED, lambda: f"{type(exc).__name__}: {exc}")

    def held_before_handler(self, task: ExecTask) -> TaskOutcome | None:
        """``interrupt_before=["__error_handler__<node>"]``: once the node failed for good
        (recorded), the step pauses before its handler; continuing the run runs the
        handler on the recorded failure (``failed_before``), not the node again."""
        loop = as_loop(self)
        handler = loop.graph.nodes[task.spec.name].error_handler
        if handler is None or handler.name not in loop.breaks_before:
            return None
        return TaskOutcome(task, paused=True)

    def handler_call(
        self, task: ExecTask, exc: Exception
    ) -> tuple[Any, tuple[Any, ...], bool] | None:
        """The node's error handler for a failure (None: it has none): the callable, its
        arguments, and whether it is a coroutine function."""
        loop = as_loop(self)
        handler = loop.graph.nodes[task.spec.name].error_handler
        if handler is None:
            return None
        task.scope.error = NodeError(task.spec.name, exc)
        fn, args = node_call(loop, task, handler)
        return fn, args, handler.is_async

    def outcome(self, task: ExecTask, output: Any) -> TaskOutcome:
        """Turn a node's return value into its writes, routing included (runs branches)."""
        loop = as_loop(self)
        name = task.spec.name
        probe.emit("task_finish", loop.tenant_id, loop.run_id, task.step, name, task.id)
        update, goto = split_output(output, name)
        # a list of Commands gives a list of updates; a list a node returns (alone or as
        # one Command's update) is one value
        many = isinstance(output, list | tuple) and any(isinstance(o, Command) for o in output)
        updates = update if many else [update]
        writes: list[tuple[str, Any]] = list(task.scope.pushed)  # push_message's first
        schema = loop.graph.schema
        if writes:
            schema.check_keys(dict(writes), f"node {name!r}")
        commanded = many or isinstance(output, Command)
        for part in updates:
            if commanded and schema.kind != "root" and _pairs(part):
                # Command(update=[("key", value), ...]), as LangGraph: each pair a write, in
                # order, a key as often as it is named
                schema.check_keys(dict(part), f"node {name!r}")
                writes.extend(part)
                if part is update:
                    update = _as_written(part)
                continue
            as_dict = schema.input_to_dict(part)
            schema.check_keys(as_dict, f"node {name!r}")
            writes.extend(as_dict.items())
        routing, local = loop._routing(name, writes, goto)
        folded = None if local is None else Folded(local, routing)
        result = TaskResult(name, task.spec.path, (*writes, *routing))
        memory = loop._memory.take(task.id) if loop._memory is not None else []
        if update is None and task.scope.pushed:  # what it pushed is what it updated
            update = _as_written(task.scope.pushed)
        return TaskOutcome(task, result, update, folded=folded, memory=memory)

    def cache_key(self, task: ExecTask, arg: Any) -> FullKey | None:
        """The node cache's key of this call (None: not cached)."""
        loop = as_loop(self)
        policy = loop.graph.nodes[task.spec.name].cache
        if policy is None or loop.graph.cache is None:
            return None
        return node_key(policy, task.spec.name, arg)

    def from_cache(self, task: ExecTask, key: FullKey | None) -> TaskOutcome | None:
        """The task's outcome from the node cache, if it holds one: the cached output
        becomes the task's writes, committed with its step like any output."""
        loop = as_loop(self)
        if key is None:
            return None
        hit = loop.graph.cache.get([key])
        if key not in hit:
            return None
        outcome = loop.outcome(task, hit[key])
        outcome.cached = True
        return outcome

    def to_cache(self, task: ExecTask, key: FullKey | None, output: Any) -> None:
        loop = as_loop(self)
        if key is not None:
            policy = loop.graph.nodes[task.spec.name].cache
            loop.graph.cache.set({key: (output, policy.ttl)})

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
        loop = as_loop(self)
        policies = loop.graph.nodes[task.spec.name].policies()
        policy = next((p for p in policies if p.matches(exc)), None)  # the first that applies
        if policy is None or attempt >= policy.max_attempts:
            return None
        task.scope.attempt = attempt + 1
        task.scope.counter = 0
        task.scope.calls = 0  # subgraph calls and @task calls get the same keys again
        task.scope.task_calls.clear()
        if loop._memory is not None:  # the failed attempt's memory writes are dropped
            loop._memory.discard(task.id)
        if task.ctx.ledger is not None:
            task.ctx.ledger.restart()
        return node_delay(policy, attempt)

    def task_done(self, outcome: TaskOutcome) -> None:
        """Save a finished peer's writes as it finishes (invariant 5): durable at once in
        sync mode, within the writer's lag bound in async mode. Exit mode keeps nothing
        until the run stops, by definition."""
        loop = as_loop(self)
        if outcome.result is None or not loop.multi_task_step or loop.durability == "exit":
            return
        try:
            loop._save_pending([outcome])
        except CodecError as exc:  # its own writes cannot be stored: this task failed, and
            outcome.result, outcome.error = None, exc  # the peers still finish and save


def defer_split(
    specs: list[TaskSpec], nodes: Mapping[str, NodeSpec]
) -> tuple[list[TaskSpec], list[TaskSpec]]:
    """(the tasks that run, the deferred ones held back): a node added with
    ``defer=True`` waits while any other task runs, so it runs when the run would
    otherwise end (LangGraph's deferred nodes)."""
    held = [t for t in specs if t.path[0] == PULL and nodes[t.name].defer]
    if not held or len(held) == len(specs):
        return specs, []
    return [t for t in specs if t not in held], held


def node_delay(policy: RetryPolicy, attempt: int) -> float:
    """LangGraph's wait before a node's next attempt: exponential backoff capped at
    ``max_interval``, plus up to a second of jitter (an effect's retries use the policy's
    full jitter instead, ``RetryPolicy.delay``)."""
    interval = min(
        policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1)
    )
    return interval + random.uniform(0, 1) if policy.jitter else interval


def _as_written(pushed: list[tuple[str, Any]]) -> Any:
    """Writes given as pairs (``push_message``'s, a ``Command``'s ``[(key, value), ...]``)
    as LangGraph's ``updates`` chunk shows them: one dict, or a dict per write when a key
    was written more than once."""
    keys = [k for k, _ in pushed]
    if len(set(keys)) < len(keys):
        return [{k: v} for k, v in pushed]
    return dict(pushed)


def _pairs(update: Any) -> bool:
    """An update given as a list of ``(key, value)`` pairs (LangGraph's tuples form)."""
    return (
        type(update) is list
        and bool(update)
        and all(type(p) is tuple and len(p) == 2 and type(p[0]) is str for p in update)
    )
