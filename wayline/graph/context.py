"""What a running node can reach: its task scope (for ``interrupt`` and the durable timers
``sleep`` / ``sleep_until``) and its context."""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from wayline.effects.ledger import EffectLedger
from wayline.errors import GraphInterrupt, WaylineError
from wayline.graph import probe
from wayline.graph.types import Interrupt, OnExpire
from wayline.ids import derive_id
from wayline.store.records import TIMER

if TYPE_CHECKING:
    from wayline.graph.node_runtime import Runtime

__all__ = [
    "NodeContext",
    "TaskScope",
    "current_scope",
    "interrupt",
    "is_scoped",
    "scoped_index",
    "sleep",
    "sleep_until",
]


@dataclasses.dataclass(slots=True)
class TaskScope:
    """Per-task bookkeeping: which resume answers this task has, and how many it used."""

    task_id: str
    resume: list[Any]
    counter: int = 0
    config: Mapping[str, Any] | None = None
    """What ``get_config()`` returns inside the task (the node's context, as a mapping)."""
    runtime: Runtime[Any] | None = None
    """What ``get_runtime()`` returns inside the task (``wayline.graph.node_runtime.Runtime``)."""
    writer: Callable[[Any], None] | None = None
    """``get_stream_writer()``: emits a ``custom`` stream chunk."""
    answers: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Resume values by interrupt id (a subgraph's node maps them to the child's)."""
    loop: Any = None
    """The run loop executing the task (subgraphs and ``@task`` reach the store through it)."""
    calls: int = 0
    """Subgraph invocations made by this task so far (each gets its own namespace)."""
    task_calls: dict[str, int] = dataclasses.field(default_factory=dict)
    """``@task`` calls made by this task so far, by task name (their record keys)."""
    node: str = ""
    """The node the task runs (recorded with what it emits for the server's streams)."""
    error: Any = None
    """In a node's error handler: the ``NodeError`` it handles."""
    pulse: Any = None
    attempt: int = 1
    """Which attempt of the task this is (``runtime.execution_info.node_attempt``)."""
    pushed: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    """Writes the attempt made before returning (``push_message``): they come first among
    the node's writes."""
    first_attempt_at: float | None = None
    """When its first attempt started, in this process (``node_first_attempt_time``)."""
    """The attempt's progress clock when its node has a timeout (``timeouts.Pulse``)."""

    def interrupt_id(self, idx: int) -> str:
        return derive_id(self.task_id, "interrupt", idx)


_SCOPE: contextvars.ContextVar[TaskScope] = contextvars.ContextVar("wayline_task_scope")


SCOPED_BASE = 1_000
"""Interrupt records at or above this index hold questions asked in a scope nested in the
task (a subgraph it runs, a ``@task`` it calls); each is answered by its id."""


def scoped_index(interrupt_id: str) -> int:
    """The record index of a nested scope's question: stable, derived from its id."""
    return SCOPED_BASE + int(interrupt_id[:7], 16)


def is_scoped(idx: int) -> bool:
    return idx >= SCOPED_BASE


def current_scope() -> TaskScope:
    try:
        return _SCOPE.get()
    except LookupError:
        raise WaylineError(
            "interrupt() was called outside a running node; call it from inside a node function"
        ) from None


def set_scope(scope: TaskScope) -> contextvars.Token[TaskScope]:
    return _SCOPE.set(scope)


def reset_scope(token: contextvars.Token[TaskScope]) -> None:
    _SCOPE.reset(token)


def interrupt(
    value: Any,
    *,
    approvers: Sequence[str] | None = None,
    expires_in: float | None = None,
    classified: str | None = None,
    on_expire: Any = None,
) -> Any:
    """Suspend the run with ``value`` as the question; return the answer when resumed.

    With ``approvers`` (actor ids or roles) or ``expires_in`` (seconds) the question is an
    approval: only ``Wayline.resume(run_id, decision, actor=..., digest=...)`` by an actor
    the policy allows, naming the proposal's digest, before it expires, can answer it; every
    request and decision is audited.

    On resume the node runs again from its start and this call returns the answer. Code
    before the call therefore runs twice: keep side effects after it, or in ``ctx.effect``,
    or put the proposal in a node of its own (see examples/refund_agent.py).

    ``classified``: the data class of the question and its answer (``"pii"``): redacting
    or erasing that class replaces both by ``Redacted`` tombstones.

    ``on_expire`` (with ``expires_in``): what the expiry does, a
    ``wayline.OnExpire``: ``fail(reason)`` (the default), ``resume(value)`` or
    ``goto(node)``. When it passes, a worker claims the run and takes that path, audited as
    an expiry (docs/wakeups.md).
    """
    scope = current_scope()
    idx = scope.counter
    scope.counter += 1
    if idx < len(scope.resume):
        return scope.resume[idx]
    governed = approvers is not None or expires_in is not None
    if on_expire is not None and expires_in is None:
        raise WaylineError(
            "interrupt(..., on_expire=...) needs expires_in=seconds: without an expiry "
            "the declared path is never taken"
        )
    if expires_in is not None and on_expire is None:
        on_expire = OnExpire.fail()
    raise GraphInterrupt(
        [
            Interrupt(
                value=value,
                id=scope.interrupt_id(idx),
                approvers=tuple(approvers) if approvers is not None else None,
                expires_at=time.time() + expires_in if expires_in is not None else None,
                cls=classified or "default",
                on_expire=on_expire,
            )
            if governed
            else Interrupt(value=value, id=scope.interrupt_id(idx), cls=classified or "default")
        ]
    )


P = ParamSpec("P")
R = TypeVar("R")


def signature_of(
    target: Callable[Concatenate[Any, P], R],
) -> Callable[[Callable[..., R]], Callable[Concatenate[Any, P], R]]:
    """Give a forwarding method the signature of the method it forwards to, so the
    parameters are declared once (type checkers and editors see the target's)."""

    def same(method: Callable[..., R]) -> Callable[Concatenate[Any, P], R]:
        return method

    return same


class NodeContext(dict[str, Any]):
    """The second argument of a node ``(state, ctx)``: where and how it is running.

    It is also the LangGraph ``config`` dict (``ctx["configurable"]``), a ``dict`` as
    LangGraph's is, so a ported node with a ``(state, config)`` signature keeps working,
    passing it on to langchain-core too (whose async runnables accept a config only as a
    ``dict``). Its attributes are read-only; the dict is a copy of the task's config.
    """

    __slots__ = ("config", "ledger", "node", "run_id", "step", "task_id", "tenant")
    run_id: str
    tenant: str
    node: str
    step: int
    task_id: str
    config: Mapping[str, Any]
    ledger: EffectLedger | None

    def __init__(
        self,
        run_id: str,
        tenant: str,
        node: str,
        step: int,
        task_id: str,
        config: Mapping[str, Any],
        ledger: EffectLedger | None = None,
    ) -> None:
        super().__init__(config)
        setter = object.__setattr__  # ``__setattr__`` refuses nodes; made for every task
        setter(self, "run_id", run_id)
        setter(self, "tenant", tenant)
        setter(self, "node", node)
        setter(self, "step", step)
        setter(self, "task_id", task_id)
        setter(self, "config", config)
        setter(self, "ledger", ledger)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"NodeContext.{name} is read-only")

    def __copy__(self) -> NodeContext:
        args = (self.run_id, self.tenant, self.node, self.step, self.task_id, self.config)
        return NodeContext(*args, self.ledger)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        """A deep copy of the config (as of LangGraph's): the ledger and its store are not
        copied."""
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> Any:
        raise TypeError("a NodeContext holds its run's ledger; pickle dict(ctx) instead")

    def __repr__(self) -> str:
        return (
            f"NodeContext(run_id={self.run_id!r}, tenant={self.tenant!r}, node={self.node!r}, "
            f"step={self.step!r}, task_id={self.task_id!r})"
        )

    @signature_of(EffectLedger.effect)
    def effect(self, name: str, fn: Callable[[str], Any], **options: Any) -> Any:
        """Perform a side effect once: ``fn(idempotency_key)`` with a durable record.

        The intent (key, ``request`` digest) is durable before ``fn`` runs and its result
        before this returns; a re-executed node gets the recorded result without calling
        ``fn``. Pass the key to the provider (an ``Idempotency-Key`` header) so that a
        resend after an unknown outcome (``idempotent=True``) is deduplicated there.
        ``key`` replaces the derived key with a business key; ``reconcile(key)`` asks the
        provider about an unknown outcome (return its result, or ``wayline.effects.NOT_FOUND``).
        The options are the ledger's (``EffectLedger.effect``), declared once there.
        ``classified`` (``"pii"``): the data class of the result; redacting or erasing that
        class replaces the stored result by its ``Redacted`` tombstone.
        """
        if probe.installed():  # a harness counting dispatches (wayline killtest)
            fn = probe.wrap_effect(
                fn,
                tenant=self.tenant,
                run_id=self.run_id,
                step=self.step,
                node=self.node,
                task_id=self.task_id,
                idempotent=bool(options.get("idempotent", False)),
            )
        return self._ledger().effect(name, fn, **options)

    def record(self, name: str, fn: Callable[[], Any], *, classified: str | None = None) -> Any:
        """Call ``fn`` once (a model call, the clock, a random draw) and record its result;
        a re-executed node gets the recorded value instead of a new one. ``classified``: the
        data class of the value (a model's answer about a person: ``"pii"``)."""
        return self._ledger().record(name, fn, classified)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` durably, holding no worker: the wake time is committed with the
        step and any worker continues the run when it is due (``wayline.sleep``). The node
        runs again from its start when it wakes, as after an ``interrupt``."""
        sleep(seconds)

    def sleep_until(self, when: Any) -> None:
        """Wait durably until ``when`` (an aware datetime, or a Unix time)."""
        sleep_until(when)

    def _ledger(self) -> EffectLedger:
        if self.ledger is None:
            raise WaylineError("this context has no effect ledger (it is not a running task)")
        return self.ledger


def coerce_context(schema: Any, context: Any) -> Any:
    """``invoke(..., context={...})`` for a dataclass or pydantic context schema: the dict
    made into the schema (its own ``TypeError`` or ``ValidationError`` when it does not
    fit); any other context as given."""
    if not isinstance(context, Mapping) or not isinstance(schema, type):
        return context
    is_model = isinstance(getattr(schema, "model_fields", None), dict)
    if dataclasses.is_dataclass(schema) or is_model:
        return schema(**context)
    return context


def sleep(seconds: float) -> None:
    """Wait ``seconds`` durably, releasing the worker (``ctx.sleep`` in a node).

    The wake time is committed with the step; any worker continues the run when it is due.
    The node runs again from its start when it wakes and this call returns, like
    ``interrupt``: keep code before it free of side effects (or in ``ctx.effect``).
    """
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        raise WaylineError(f"sleep() takes a number of seconds >= 0, not {seconds!r}")
    _sleep_to(time.time() + float(seconds))


def sleep_until(when: dt.datetime | float) -> None:
    """Wait durably until ``when`` (an aware datetime, or a Unix time), releasing the worker."""
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            raise WaylineError(
                f"sleep_until({when!r}) needs an aware datetime (tzinfo set): a naive one "
                "means a different time on each worker's machine"
            )
        at = when.timestamp()
    elif isinstance(when, int | float) and not isinstance(when, bool):
        at = float(when)
    else:
        raise WaylineError(f"sleep_until() takes an aware datetime or a Unix time, not {when!r}")
    _sleep_to(at)


def _sleep_to(at: float) -> None:
    scope = current_scope()
    idx = scope.counter
    scope.counter += 1
    if idx < len(scope.resume):
        return  # woken: the timer's record was answered when it fell due
    iso = dt.datetime.fromtimestamp(at, dt.UTC).isoformat()
    raise GraphInterrupt(
        [
            Interrupt(
                value={"sleep_until": iso},
                id=scope.interrupt_id(idx),
                expires_at=at,
                on_expire=TIMER,
            )
        ]
    )
