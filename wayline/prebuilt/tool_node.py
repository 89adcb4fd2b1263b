"""``ToolNode``: run the tool calls of the last AI message and answer each with a
``ToolMessage``, as LangGraph's prebuilt node does; ``tools_condition`` routes to it.

langchain-core is imported when a ``ToolNode`` is built, not when wayline is. Tools run in
the order the model asked for them (in parallel threads when there are several), and a
tool that raises is answered with an error ``ToolMessage`` (``handle_tool_errors=True``, the
default) so that the model can correct itself, as in LangGraph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from wayline.errors import GraphError, InvalidUpdateError

__all__ = ["ToolNode", "tools_condition"]

_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."


class ToolNode:
    """A node that executes the tool calls of the last ``AIMessage`` in ``messages_key``."""

    def __init__(
        self,
        tools: Sequence[Any],
        *,
        name: str = "tools",
        messages_key: str = "messages",
        handle_tool_errors: bool | str | Callable[[Exception], str] | None = None,
    ) -> None:
        try:
            from langchain_core.tools import BaseTool
            from langchain_core.tools import tool as as_tool
        except ImportError:  # pragma: no cover - exercised only without the extra
            raise GraphError(
                "ToolNode needs langchain-core: pip install 'wayline[langchain]'"
            ) from None
        self.tools_by_name: dict[str, Any] = {}
        for t in tools:
            bound = t if isinstance(t, BaseTool) else as_tool(t)
            self.tools_by_name[bound.name] = bound
        self.name = name
        self.__name__ = name
        self.messages_key = messages_key
        self.handle_tool_errors = handle_tool_errors

    def __call__(self, state: Any) -> dict[str, Any]:
        calls, as_list = self._calls(state)
        if len(calls) <= 1:
            answers = [self._run(c) for c in calls]
        else:
            with ThreadPoolExecutor(max_workers=min(8, len(calls))) as pool:
                answers = list(pool.map(self._run, calls))
        return answers if as_list else {self.messages_key: answers}  # type: ignore[return-value]

    def _calls(self, state: Any) -> tuple[list[dict[str, Any]], bool]:
        if isinstance(state, list):
            messages, as_list = state, True
        elif isinstance(state, Mapping):
            messages, as_list = state.get(self.messages_key, []), False
        else:
            messages, as_list = getattr(state, self.messages_key, []), False
        if not messages:
            raise InvalidUpdateError(f"ToolNode found no messages in {self.messages_key!r}")
        last = messages[-1]
        return list(getattr(last, "tool_calls", None) or []), as_list

    def _run(self, call: Mapping[str, Any]) -> Any:
        from langchain_core.messages import ToolMessage

        tool = self.tools_by_name.get(call["name"])
        if tool is None:
            known = ", ".join(self.tools_by_name)
            return ToolMessage(
                content=f"Error: {call['name']} is not a valid tool, try one of [{known}].",
                name=call["name"],
                tool_call_id=call["id"],
                status="error",
            )
        try:
            result = tool.invoke({**call, "type": "tool_call"})
        except Exception as exc:
            content = self._error_text(exc, call)
            if content is None:
                raise
            return ToolMessage(
                content=content, name=call["name"], tool_call_id=call["id"], status="error"
            )
        if isinstance(result, ToolMessage):
            return result
        return ToolMessage(content=str(result), name=call["name"], tool_call_id=call["id"])

    def _error_text(self, exc: Exception, call: Mapping[str, Any]) -> str | None:
        handle = self.handle_tool_errors
        if handle is None:  # LangGraph's default: only invalid arguments become a message
            return _invalid_input(exc, call)
        if handle is False:
            return None
        if isinstance(handle, str):
            return handle
        if callable(handle):
            return handle(exc)
        return _ERROR_TEMPLATE.format(error=repr(exc))


def tools_condition(state: Any, messages_key: str = "messages") -> Literal["tools", "__end__"]:
    """``"tools"`` when the last AI message asks for tool calls, else END."""
    if isinstance(state, list):
        messages = state
    elif isinstance(state, Mapping):
        messages = state.get(messages_key, [])
    else:
        messages = getattr(state, messages_key, [])
    if not messages:
        raise InvalidUpdateError(f"tools_condition found no messages in {messages_key!r}")
    return "tools" if getattr(messages[-1], "tool_calls", None) else "__end__"


_INVOCATION_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)


def _invalid_input(exc: Exception, call: Mapping[str, Any]) -> str | None:
    """LangGraph's message for arguments the tool's schema refuses; None for any other
    error (which then fails the node)."""
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ != "ValidationError" or not callable(errors):
        return None
    shown = "\n".join(
        f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'Unknown error')}"
        for e in errors()
    )
    return _INVOCATION_TEMPLATE.format(
        tool_name=call["name"], tool_kwargs=call.get("args", {}), error=shown
    )
