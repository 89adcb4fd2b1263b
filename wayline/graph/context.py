"""What a running node can reach: its task scope (for ``interrupt``) and its context."""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from wayline.errors import GraphInterrupt, WaylineError
from wayline.graph.algo import derive_id
from wayline.graph.types import Interrupt

__all__ = ["NodeContext", "TaskScope", "current_scope", "interrupt"]


@dataclasses.dataclass(slots=True)
class TaskScope:
    """Per-task bookkeeping: which resume answers this task has, and how many it used."""

    task_id: str
    resume: list[Any]
    counter: int = 0

    def interrupt_id(self, idx: int) -> str:
        return derive_id(self.task_id, "interrupt", idx)


_SCOPE: contextvars.ContextVar[TaskScope] = contextvars.ContextVar("wayline_task_scope")


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


def interrupt(value: Any) -> Any:
    """Suspend the run with ``value`` as the question; return the answer when resumed.

    On resume the node runs again from its start and this call returns the answer given
    through ``Command(resume=...)``. Code before the call therefore runs twice: keep side
    effects after it, or in ``ctx.effect``, or put the proposal in a node of its own.
    """
    scope = current_scope()
    idx = scope.counter
    scope.counter += 1
    if idx < len(scope.resume):
        return scope.resume[idx]
    raise GraphInterrupt([Interrupt(value=value, id=scope.interrupt_id(idx))])


@dataclasses.dataclass(frozen=True, slots=True)
class NodeContext(Mapping[str, Any]):
    """The second argument of a node ``(state, ctx)``: where and how it is running.

    It also reads as the LangGraph ``config`` mapping (``ctx["configurable"]``), so a ported
    node with a ``(state, config)`` signature keeps working.
    """

    run_id: str
    tenant: str
    node: str
    step: int
    task_id: str
    config: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.config[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.config)

    def __len__(self) -> int:
        return len(self.config)
