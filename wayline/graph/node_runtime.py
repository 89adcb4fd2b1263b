"""``Runtime``: what a node receives besides its state, as ``langgraph.runtime``
(``wayline.runtime`` is that module's face, with ``get_runtime``).

A node that declares a ``runtime`` parameter (or one annotated ``Runtime[Ctx]``) gets the
invocation's ``context`` (``invoke(..., context=Ctx(...))``), a ``stream_writer`` for the
``custom`` stream mode and, in the functional API, ``previous``. The context is not stored
with the run: like LangGraph's, it is given again on every invocation (a resume included).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from wayline.errors import WaylineError

__all__ = [
    "DEFAULT_RUNTIME",
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
]

ContextT = TypeVar("ContextT")


def _drop(chunk: Any) -> None:
    """The stream writer when nothing streams ``custom``: chunks go nowhere."""


def _drop_beat() -> None:
    """Nothing to do: a worker extends its lease on its own."""


@dataclasses.dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """Where the running node is, as LangGraph's: its checkpoint, namespace, task and
    thread (wayline's run id), and which attempt this is."""

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    run_id: str | None = None
    node_attempt: int = 1
    node_first_attempt_time: float | None = None

    def patch(self, **overrides: Any) -> ExecutionInfo:
        return dataclasses.replace(self, **overrides)


@dataclasses.dataclass(frozen=True, slots=True)
class ServerInfo:
    """What LangGraph's server tells a node about itself; None outside one."""

    assistant_id: str
    graph_id: str
    user: Any = None


class RunControl:
    """Asks a running invocation to stop cleanly between steps (``invoke(...,
    control=control)``; ``control.request_drain()`` from anywhere, any thread): the step in
    flight commits, the run raises ``GraphDrained``, and ``invoke(None, config)`` continues
    it. One control per run: once drained it stays drained."""

    __slots__ = ("_drain_reason",)

    def __init__(self) -> None:
        self._drain_reason: str | None = None

    def request_drain(self, reason: str = "shutdown") -> None:
        self._drain_reason = reason  # one attribute write: safe from any thread

    @property
    def drain_requested(self) -> bool:
        return self._drain_reason is not None

    @property
    def drain_reason(self) -> str | None:
        return self._drain_reason


@dataclasses.dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """The run-scoped context of one node call."""

    context: ContextT = None  # type: ignore[assignment]
    store: Any = None
    """LangGraph's long-term memory store (``compile(store=...)``; None without one)."""
    stream_writer: Callable[[Any], None] = _drop
    heartbeat: Callable[[], None] = _drop_beat
    """LangGraph's liveness hook: refreshes the node's idle timeout (``TimeoutPolicy``);
    otherwise a no-op: wayline workers heartbeat their lease themselves."""
    previous: Any = None
    """In an ``@entrypoint``: what the previous invocation on this thread returned (or
    saved with ``entrypoint.final``)."""
    execution_info: ExecutionInfo | None = None
    server_info: ServerInfo | None = None
    control: RunControl | None = None

    def override(self, **changes: Any) -> Runtime[ContextT]:
        return dataclasses.replace(self, **changes)

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """``other``'s values where it has them, this runtime's elsewhere (LangGraph's)."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=other.stream_writer
            if other.stream_writer is not _drop
            else self.stream_writer,
            heartbeat=other.heartbeat if other.heartbeat is not _drop_beat else self.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def patch_execution_info(self, **overrides: Any) -> Runtime[ContextT]:
        if self.execution_info is None:
            raise WaylineError("Cannot patch execution_info before it has been set")
        return dataclasses.replace(self, execution_info=self.execution_info.patch(**overrides))

    @property
    def drain_requested(self) -> bool:
        return self.control is not None and self.control.drain_requested

    @property
    def drain_reason(self) -> str | None:
        return self.control.drain_reason if self.control is not None else None


DEFAULT_RUNTIME: Runtime[Any] = Runtime()
"""A runtime with nothing set, as LangGraph's ``DEFAULT_RUNTIME``."""
