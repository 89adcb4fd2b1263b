"""``langgraph._internal._constants``: the few of LangGraph's internal config keys a program
may set and wayline honours, spelled as LangGraph spells them so a config built for
LangGraph means the same here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from wayline.interop import lg_paths

__all__ = ["CONFIG_KEY_NODE_FINISHED", "ERROR", "INTERRUPT", "PULL", "PUSH", "node_finished"]

PULL = lg_paths.LG_PATH_KINDS[lg_paths.PULL]
"""The first item of a node's task path (``PregelTask.path == (PULL, "node")``)."""
PUSH = lg_paths.LG_PATH_KINDS[lg_paths.PUSH]
"""The first item of a ``Send``'s task path (``(PUSH, index)``)."""

ERROR = "__error__"
"""The channel of a failed task's write in a checkpointer's ``pending_writes``: what it raised."""
INTERRUPT = "__interrupt__"
"""The channel of an interrupted task's write in ``pending_writes``: its interrupts."""

CONFIG_KEY_NODE_FINISHED = "__pregel_node_finished"
"""``config["configurable"][CONFIG_KEY_NODE_FINISHED] = fn``: ``fn(node)`` is called with
each node's name as its task finishes (a node, an error handler, a ``@task``), at every
subgraph level; a task whose output was replayed or came from a cache did not run now and
is not reported."""


def node_finished(config: Mapping[str, Any]) -> Callable[[str], None] | None:
    """The callback a config names under ``CONFIG_KEY_NODE_FINISHED`` (None: none)."""
    found = (config.get("configurable") or {}).get(CONFIG_KEY_NODE_FINISHED)
    return found if callable(found) else None
