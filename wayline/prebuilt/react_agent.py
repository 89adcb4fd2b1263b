"""``create_react_agent``: LangGraph's prebuilt tool-calling agent (a model node and a
``ToolNode`` in a loop, ``tools_condition`` between them), built on wayline's graph.

Covers the common arguments (``model``, ``tools``, ``prompt``, ``state_schema``,
``context_schema``, ``checkpointer``, ``interrupt_before``/``after``, ``name``). The tools
of one model turn run in one ``tools`` step (LangGraph's "v1"); LangGraph's default "v2"
sends each call as a task of its own, so its ``updates`` stream has one chunk per call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wayline.errors import GraphError
from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.graph.message import MessagesState
from wayline.graph.types import END, START
from wayline.prebuilt.tool_node import ToolNode, tools_condition

__all__ = ["create_react_agent"]


def create_react_agent(
    model: Any,
    tools: Sequence[Any] | ToolNode,
    *,
    prompt: str | Any | Callable[[Any], Any] | None = None,
    state_schema: type | None = None,
    context_schema: type | None = None,
    checkpointer: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    name: str | None = None,
    debug: bool = False,
    version: str = "v2",
    **unsupported: Any,
) -> CompiledGraph:
    if unsupported:
        raise GraphError(
            f"create_react_agent({', '.join(sorted(unsupported))}=...) is not supported by "
            "wayline: build the graph with StateGraph, ToolNode and tools_condition instead"
        )
    tool_node = tools if isinstance(tools, ToolNode) else ToolNode(tools)
    bound = model
    tool_list = list(tool_node.tools_by_name.values())
    if tool_list and hasattr(model, "bind_tools") and not _already_bound(model):
        bound = model.bind_tools(tool_list)

    def agent(state: Any) -> dict[str, Any]:
        messages = _messages_of(state)
        return {"messages": [bound.invoke(_with_prompt(prompt, state, messages))]}

    builder = StateGraph(state_schema or MessagesState, context_schema, name=name or "agent")
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    if tool_list:
        builder.add_node("tools", tool_node)
        builder.add_conditional_edges("agent", tools_condition, ["tools", END])
        builder.add_edge("tools", "agent")
    else:
        builder.add_edge("agent", END)
    return builder.compile(
        checkpointer, interrupt_before=interrupt_before, interrupt_after=interrupt_after
    )


def _already_bound(model: Any) -> bool:
    return bool(getattr(model, "kwargs", {}).get("tools"))


def _messages_of(state: Any) -> list[Any]:
    if isinstance(state, dict):
        return list(state.get("messages", []))
    return list(getattr(state, "messages", []))


def _with_prompt(prompt: Any, state: Any, messages: list[Any]) -> Any:
    if prompt is None:
        return messages
    if isinstance(prompt, str):
        from langchain_core.messages import SystemMessage

        return [SystemMessage(content=prompt), *messages]
    if callable(prompt) and not hasattr(prompt, "type"):
        return prompt(state)
    return [prompt, *messages]  # a SystemMessage
