"""Prebuilt nodes at LangGraph's path (``langgraph.prebuilt``): ``ToolNode``,
``tools_condition``, ``create_react_agent`` and the arguments a tool may have filled in
(``InjectedState``, ``InjectedStore``, ``ToolRuntime``), for langchain-core tools and
models (``pip install "wayline[langchain]"``)."""

from wayline.prebuilt.chat_agent_executor import create_react_agent
from wayline.prebuilt.tool_node import (
    InjectedState,
    InjectedStore,
    ToolNode,
    ToolRuntime,
    tools_condition,
)

__all__ = [
    "InjectedState",
    "InjectedStore",
    "ToolNode",
    "ToolRuntime",
    "create_react_agent",
    "tools_condition",
]
