"""A tool that returns a ``Command`` (or a list with Commands) must reach ``ToolNode`` as
that Command: langchain-core passes a tool's output through unchanged only when it is a
``ToolOutputMixin`` and otherwise turns it into a string in a ``ToolMessage``. LangGraph's
``Command`` is one; wayline's is not (its graph layer does not import langchain-core), so
``ToolNode`` runs a copy of each tool whose ``_run``/``_arun`` wrap such an output in a
``ToolOutputMixin`` carrier, and unwraps it."""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.tools import BaseTool

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


_CARRYING: dict[type[BaseTool], type[BaseTool]] = {}


def _carrying_class(cls: type[BaseTool]) -> type[BaseTool]:
    """``cls`` with ``_run``/``_arun`` wrapped; ``functools.wraps`` keeps their signatures,
    which langchain-core reads to pass ``run_manager`` and ``config``."""
    known = _CARRYING.get(cls)
    if known is not None:
        return known
    run, arun = cls._run, cls._arun

    @functools.wraps(run)
    def _run(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
        return _carry(run(self, *args, **kwargs))

    @functools.wraps(arun)
    async def _arun(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
        return _carry(await arun(self, *args, **kwargs))

    made = type(cls.__name__, (cls,), {"_run": _run, "_arun": _arun, "__module__": cls.__module__})
    _CARRYING[cls] = made
    return made


def executable(tool: BaseTool) -> BaseTool:
    """A copy of ``tool`` whose Command outputs survive langchain-core's formatting."""
    copy = tool.model_copy()
    object.__setattr__(copy, "__class__", _carrying_class(type(tool)))
    return copy


def unwrap(response: Any) -> Any:
    return response.value if isinstance(response, _Carried) else response
