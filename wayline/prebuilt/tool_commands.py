"""A tool that returns a ``Command`` (or a list with Commands) must reach ``ToolNode`` as
that Command: langchain-core passes a tool's output through unchanged only when it is a
``ToolOutputMixin`` and otherwise turns it into a string in a ``ToolMessage``. LangGraph's
``Command`` is one; wayline's is not (its graph layer does not import langchain-core), so
``ToolNode`` runs a copy of each function tool whose function wraps such an output in a
``ToolOutputMixin`` carrier, and unwraps it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.tools import BaseTool, StructuredTool

from wayline.graph.types import Command

__all__ = ["executable", "unwrap"]


class _Carried(ToolOutputMixin):
    """A tool's Command output, on its way through langchain-core's formatting."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _carry(output: Any) -> Any:
    if isinstance(output, Command) or (
        isinstance(output, list) and any(isinstance(o, Command) for o in output)
    ):
        return _Carried(output)
    return output


def _wrap(func: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            return _carry(await func(*args, **kwargs))

        return acall

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        return _carry(func(*args, **kwargs))

    return call


def executable(tool: BaseTool) -> BaseTool:
    """``tool`` itself, or for a function tool a copy whose Command outputs survive."""
    if not isinstance(tool, StructuredTool) or (tool.func is None and tool.coroutine is None):
        return tool
    return tool.model_copy(
        update={
            "func": _wrap(tool.func) if tool.func is not None else None,
            "coroutine": _wrap(tool.coroutine) if tool.coroutine is not None else None,
        }
    )


def unwrap(response: Any) -> Any:
    return response.value if isinstance(response, _Carried) else response
