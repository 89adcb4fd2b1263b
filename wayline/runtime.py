"""``langgraph.runtime``'s face: ``Runtime`` (what a node receives besides its state,
``wayline.graph.node_runtime``) and ``get_runtime``, the running task's."""

from __future__ import annotations

from typing import Any

from wayline.errors import WaylineError
from wayline.graph.calling import runtime_of
from wayline.graph.context import current_scope
from wayline.graph.node_runtime import (
    DEFAULT_RUNTIME,
    ExecutionInfo,
    RunControl,
    Runtime,
    ServerInfo,
)

__all__ = [
    "DEFAULT_RUNTIME",
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
    "get_runtime",
]


def get_runtime(context_schema: Any = None) -> Runtime[Any]:
    """The ``Runtime`` of the node or task that is running."""
    scope = current_scope()
    if scope.runtime is None and scope.loop is None:
        raise WaylineError("get_runtime() found no runtime: call it from inside a running node")
    return runtime_of(scope)
