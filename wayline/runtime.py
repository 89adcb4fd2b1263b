"""``Runtime``: what a node receives besides its state, as ``langgraph.runtime``.

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

__all__ = ["Runtime", "get_runtime"]

ContextT = TypeVar("ContextT")


def _drop(chunk: Any) -> None:
    """The stream writer when nothing streams ``custom``: chunks go nowhere."""


def _drop_beat() -> None:
    """Nothing to do: a worker extends its lease on its own."""


@dataclasses.dataclass(frozen=True)
class Runtime(Generic[ContextT]):
    """The run-scoped context of one node call."""

    context: ContextT = None  # type: ignore[assignment]
    store: Any = None
    """LangGraph's long-term memory store (``compile(store=...)``; None without one)."""
    stream_writer: Callable[[Any], None] = _drop
    heartbeat: Callable[[], None] = _drop_beat
    """LangGraph's liveness hook; a no-op: wayline workers heartbeat their lease themselves."""
    previous: Any = None
    """In an ``@entrypoint``: what the previous invocation on this thread returned (or
    saved with ``entrypoint.final``)."""
    execution_info: Any = None
    server_info: Any = None

    def override(self, **changes: Any) -> Runtime[ContextT]:
        return dataclasses.replace(self, **changes)


def get_runtime(context_schema: Any = None) -> Runtime[Any]:
    """The ``Runtime`` of the node or task that is running."""
    from wayline.graph.calling import runtime_of
    from wayline.graph.context import current_scope

    scope = current_scope()
    if scope.runtime is None and scope.loop is None:
        raise WaylineError("get_runtime() found no runtime: call it from inside a running node")
    return runtime_of(scope)
