"""``langgraph._internal._constants``: the few of LangGraph's internal config keys a program
may set and wayline honours, spelled as LangGraph spells them so a config built for
LangGraph means the same here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["CONFIG_KEY_NODE_FINISHED", "node_finished"]

CONFIG_KEY_NODE_FINISHED = "__pregel_node_finished"
"""``config["configurable"][CONFIG_KEY_NODE_FINISHED] = fn``: ``fn(node)`` is called with
each node's name as its task finishes (a node, an error handler, a ``@task``), at every
subgraph level; a task whose output was replayed or came from a cache did not run now and
is not reported."""


def node_finished(config: Mapping[str, Any]) -> Callable[[str], None] | None:
    """The callback a config names under ``CONFIG_KEY_NODE_FINISHED`` (None: none)."""
    found = (config.get("configurable") or {}).get(CONFIG_KEY_NODE_FINISHED)
    return found if callable(found) else None
