"""``get_config`` and ``get_stream_writer``, as ``langgraph.config``: reach the running
node's config and the ``custom`` stream from code that was not handed them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from wayline.graph.context import current_scope

__all__ = ["get_config", "get_store", "get_stream_writer"]


def get_config() -> Mapping[str, Any]:
    """The config of the node that is running (``config["configurable"]["thread_id"]``...)."""
    config = current_scope().config
    return config if config is not None else {}


def get_store() -> Any:
    """The long-term memory store of the node that is running (``compile(store=...)``), as
    ``langgraph.config.get_store``; inside a run its writes commit with the node's step."""
    from wayline.graph.calling import store_of

    return store_of(current_scope())


def get_stream_writer() -> Callable[[Any], None]:
    """A function that emits its argument on the ``custom`` stream mode (a no-op when the
    caller does not stream ``custom``)."""
    writer = current_scope().writer
    return writer if writer is not None else _drop


def _drop(chunk: Any) -> None:
    """No one streams ``custom``: the chunk goes nowhere, as in LangGraph."""
