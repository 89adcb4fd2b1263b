"""Prebuilt nodes at LangGraph's path (``langgraph.prebuilt``): ``ToolNode``,
``tools_condition`` and ``create_react_agent``, for langchain-core tools and models
(``pip install "wayline[langchain]"``)."""

from wayline.prebuilt.react_agent import create_react_agent
from wayline.prebuilt.tool_node import ToolNode, tools_condition

__all__ = ["ToolNode", "create_react_agent", "tools_condition"]
