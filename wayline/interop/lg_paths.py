"""A task path's kind, as wayline and as LangGraph spell it.

Inside, a task's path is ``("pull", node)`` or ``("push", index)``: task ids and effect keys
derive from it, so its spelling never changes. Wherever a path leaves wayline for a LangGraph
program (``PregelTask.path``, ``langgraph_path`` in stream metadata, the API's ``path``), its
kind is LangGraph's (``"__pregel_pull"``, ``"__pregel_push"``), and a ``Send``'s path ends in
``False`` as LangGraph's does (its mark for a task that is not a functional-API call):
``("__pregel_push", 0, False)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["LG_PATH_KINDS", "PULL", "PUSH", "lg_path"]

PULL = "pull"
PUSH = "push"
LG_PATH_KINDS = {PULL: "__pregel_pull", PUSH: "__pregel_push"}


def lg_path(path: Sequence[Any]) -> tuple[Any, ...]:
    """``path`` as LangGraph has it: ``("__pregel_pull", "a")``,
    ``("__pregel_push", 0, False)``."""
    if not path:
        return ()
    if path[0] == PUSH and len(path) == 2:
        return (LG_PATH_KINDS[PUSH], path[1], False)
    return (LG_PATH_KINDS.get(path[0], path[0]), *path[1:])
