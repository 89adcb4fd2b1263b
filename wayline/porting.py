"""How a LangGraph program's imports map onto wayline: ``MODULE_MAP`` is the rename a port
applies (and the one the LangGraph test-suite harness reads), kept beside the code so the
map and the modules cannot drift apart (``docs/porting.md`` shows the same table)."""

from __future__ import annotations

import importlib.util

__all__ = ["MODULE_MAP", "PORTS"]

PORTS: dict[str, str] = {
    "langgraph._internal._constants": "wayline.graph.lg_constants",
    "langgraph.cache.base": "wayline.cache.base",
    "langgraph.cache.memory": "wayline.cache.memory",
    "langgraph.channels.delta": "wayline.channels.delta",
    "langgraph.checkpoint.memory": "wayline.checkpoint.memory",
    "langgraph.config": "wayline.config",
    "langgraph.constants": "wayline.constants",
    "langgraph.errors": "wayline.errors",
    "langgraph.func": "wayline.func",
    "langgraph.graph": "wayline.graph",
    "langgraph.graph.message": "wayline.graph.message",
    "langgraph.graph.state": "wayline.graph.state",
    "langgraph.managed": "wayline.managed",
    "langgraph.prebuilt": "wayline.prebuilt",
    "langgraph.prebuilt.chat_agent_executor": "wayline.prebuilt.chat_agent_executor",
    "langgraph.prebuilt.tool_node": "wayline.prebuilt.tool_node",
    "langgraph.runtime": "wayline.runtime",
    "langgraph.store.base": "wayline.memory.base",
    "langgraph.store.memory": "wayline.memory.in_memory",
    "langgraph.types": "wayline.types",
}
"""Every rename wayline defines: a ``langgraph.*`` module to its wayline counterpart."""


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


MODULE_MAP: dict[str, str] = {k: v for k, v in PORTS.items() if _present(v)}
"""The renames whose wayline module is installed: ``PORTS`` less the optional packages
missing from this install, so a port never renames an import to a module that is absent."""
