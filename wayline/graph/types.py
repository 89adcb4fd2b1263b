"""The small value types of the graph API, named as LangGraph names them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, Literal, TypeVar

from wayline.codec import OMIT_DEFAULT
from wayline.graph.timeouts import TimeoutPolicy

__all__ = [
    "END",
    "START",
    "Command",
    "Durability",
    "Interrupt",
    "OnExpire",
    "ReadInfo",
    "Send",
    "StateSnapshot",
    "StreamMode",
    "StreamWriter",
]

START: Final = "__start__"
END: Final = "__end__"

Durability = Literal["sync", "async", "exit"]
StreamMode = Literal["values", "updates", "custom", "messages", "tasks", "checkpoints", "debug"]

StreamWriter = Callable[[Any], None]
"""What ``get_stream_writer()`` returns (and a node's ``writer`` parameter receives)."""

N = TypeVar("N")
"""The targets a node's ``Command`` may go to, as in LangGraph's ``Command[Literal["a", "b"]]``."""


@dataclasses.dataclass(frozen=True, slots=True)
class Send:
    """Run ``node`` in the next superstep with ``arg`` as its input (dynamic fan-out).

    ``timeout`` (a ``TimeoutPolicy``, or a number or ``timedelta``: a run timeout) bounds
    each attempt of this task instead of the node's own timeout, as LangGraph's."""

    node: str
    arg: Any
    timeout: TimeoutPolicy | None = dataclasses.field(
        default=None, kw_only=True, metadata={OMIT_DEFAULT: True}
    )
    """Stored only when set, so a Send without one is stored as it always was."""

    def __post_init__(self) -> None:
        if self.timeout is not None and not isinstance(self.timeout, TimeoutPolicy):
            object.__setattr__(self, "timeout", TimeoutPolicy.coerce(self.timeout))

    def __repr__(self) -> str:
        """As LangGraph's: the timeout only when there is one."""
        if self.timeout is None:
            return f"Send(node={self.node!r}, arg={self.arg!r})"
        return f"Send(node={self.node!r}, arg={self.arg!r}, timeout={self.timeout!r})"


@dataclasses.dataclass(frozen=True, slots=True)
class Command(Generic[N]):
    """Returned by a node to update state and route; passed to ``invoke`` to resume.

    Generic so that a node can declare where it may go: ``-> Command[Literal["b", END]]``.

    ``goto`` names the next node(s) or Sends; ``resume`` answers a pending ``interrupt``
    (one value, or a mapping from interrupt id to value when several are pending).
    """

    update: Any = None
    goto: str | Send | Sequence[str | Send] = ()
    resume: Any = None
    graph: str | None = None

    PARENT = "__parent__"

    def __repr__(self) -> str:
        """As LangGraph's: only the fields that are set, in LangGraph's order, so a
        Command written into state as text reads the same on both."""
        set_ = [(k, getattr(self, k)) for k in ("graph", "update", "resume", "goto")]
        return "Command(" + ", ".join(f"{k}={v!r}" for k, v in set_ if v) + ")"


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Interrupt:
    """A pending question a node asked with ``interrupt(value)``.

    ``id`` is derived from the task and the interrupt's index within it, so it is the same
    in every process that computes it. An approval (``interrupt(value, approvers=...,
    expires_in=...)``) also says who may decide and until when; once recorded, ``digest``
    is what a decision must name.
    """

    value: Any
    id: str
    approvers: tuple[str, ...] | None = None
    expires_at: float | None = None
    digest: str | None = None
    cls: str = "default"
    """The data class of the question and its answer (``interrupt(..., classified=...)``)."""
    on_expire: Any = None
    """What ``expires_at`` does when it passes: ``wayline.graph.wakeups.OnExpire`` (an
    approval's declared path), ``"wake"`` (a durable timer, ``sleep``), None: nothing."""

    def __eq__(self, other: object) -> bool:
        """Equal as LangGraph's ``Interrupt`` is, by ``value`` and ``id``: the approval
        fields describe how it may be answered, not which question it is."""
        if not isinstance(other, Interrupt):
            return NotImplemented
        return bool(self.value == other.value and self.id == other.id)

    def __hash__(self) -> int:
        return hash(self.id)


@dataclasses.dataclass(frozen=True, slots=True)
class OnExpire:
    """What an approval's expiry does (``interrupt(..., expires_in=60, on_expire=...)``).

    ``OnExpire.fail(reason)`` ends the run failed with the reason (the default for an
    approval with ``expires_in``); ``OnExpire.resume(value)`` answers it with ``value``, as
    if decided; ``OnExpire.goto(node)`` leaves the waiting step and continues at ``node``
    (the unfinished step's other writes are dropped, as with new input). Each is audited as
    an expiry, by ``system:expiry``.
    """

    do: Literal["fail", "resume", "goto"]
    reason: str = ""
    value: Any = None
    node: str = ""

    @classmethod
    def fail(cls, reason: str = "the approval expired unanswered") -> OnExpire:
        return cls("fail", reason=reason)

    @classmethod
    def resume(cls, value: Any) -> OnExpire:
        return cls("resume", value=value)

    @classmethod
    def goto(cls, node: str) -> OnExpire:
        if not isinstance(node, str) or not node:
            raise ValueError("OnExpire.goto needs the name of a node of the graph")
        return cls("goto", node=node)


@dataclasses.dataclass(frozen=True, slots=True)
class PregelTask:
    """A task of the next superstep, as ``get_state`` reports it."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: Exception | str | None = None
    """The ``repr`` of the exception a failed task raised at this step, as LangGraph's
    snapshots show it read back (``wayline.graph.task_errors``)."""
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    """With ``get_state(config, subgraphs=True)``: the state of the subgraph this task runs."""
    result: Any = None

    def _replace(self, **changes: Any) -> PregelTask:
        """A copy with ``changes`` (LangGraph's ``PregelTask`` is a ``NamedTuple``)."""
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True, slots=True)
class ReadInfo:
    """What reading a snapshot back found and cost, beside LangGraph's fields
    (``StateSnapshot.read_info``): the run's status then, the graph that wrote it, and the
    reconstruction's figures (the snapshot row it started from, the deltas it re-folded and
    every row it read; docs/checkpoints.md)."""

    status: str
    """The run's status at that step: its own at the latest step, ``"running"`` before."""
    graph: str
    graph_version: str
    snapshot_step: int | None
    replayed_steps: int
    rows_read: int


@dataclasses.dataclass(frozen=True, slots=True)
class StateSnapshot:
    """The state of a run at one committed step, with LangGraph's fields (and equality:
    ``read_info`` is not compared)."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: dict[str, Any]
    metadata: dict[str, Any]
    created_at: str | None
    parent_config: dict[str, Any] | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...] = ()
    read_info: ReadInfo | None = dataclasses.field(default=None, compare=False, repr=False)
    """wayline's figures of the read (None: a snapshot not read from the store)."""

    def _replace(self, **changes: Any) -> StateSnapshot:
        """A copy with ``changes`` (LangGraph's ``StateSnapshot`` is a ``NamedTuple``)."""
        return dataclasses.replace(self, **changes)
