"""A task path's kind, as wayline and as LangGraph spell it.

Inside, a task's path is ``("pull", node)`` or ``("push", index)``: task ids and effect keys
derive from it, so its spelling never changes. Wherever a path leaves wayline for a LangGraph
program (``PregelTask.path``, ``langgraph_path`` in stream metadata, the API's ``path``), its
kind is LangGraph's (``"__pregel_pull"``, ``"__pregel_push"``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["LG_PATH_KINDS", "PULL", "PUSH", "lg_path"]

PULL = "pull"
PUSH = "push"
LG_PATH_KINDS = {PULL: "__pregel_pull", PUSH: "__pregel_push"}


def lg_path(path: Sequence[Any]) -> tuple[Any, ...]:
    """``path`` with its kind as LangGraph spells it (``("__pregel_pull", "node")``)."""
    return (LG_PATH_KINDS.get(path[0], path[0]), *path[1:]) if path else ()
