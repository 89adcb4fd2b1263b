"""``invoke(..., stream_mode=m)`` as LangGraph's: with ``m`` other than ``"values"`` (a mode
or a list of modes), the result is the list of chunks ``stream(..., stream_mode=m)`` yields,
not the state. A decorator, so ``invoke`` and ``ainvoke`` keep one body each."""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["alisted_modes", "listed_modes"]

F = TypeVar("F", bound=Callable[..., Any])


def _listed(kwargs: dict[str, Any]) -> bool:
    mode = kwargs.get("stream_mode", "values")
    if mode == "values":
        kwargs.pop("stream_mode", None)
        return False
    return True


def listed_modes(invoke: F) -> F:
    """``invoke``, returning the chunks as a list when given a ``stream_mode`` other than
    ``"values"``."""

    @functools.wraps(invoke)
    def wrapper(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if _listed(kwargs):
            return list(self.stream(input, config, **kwargs))
        return invoke(self, input, config, **kwargs)

    return typing.cast("F", wrapper)


def alisted_modes(ainvoke: F) -> F:
    """``ainvoke``, as ``listed_modes`` (the chunks of ``astream``)."""

    @functools.wraps(ainvoke)
    async def wrapper(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if _listed(kwargs):
            return [chunk async for chunk in self.astream(input, config, **kwargs)]
        return await ainvoke(self, input, config, **kwargs)

    return typing.cast("F", wrapper)
