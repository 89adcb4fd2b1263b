"""``langgraph.graph.state``'s names, for programs that import or annotate with them."""

from __future__ import annotations

import typing
import warnings
from typing import Any

from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph

CompiledStateGraph = CompiledGraph
"""LangGraph's name for a compiled ``StateGraph``."""

__all__ = ["CompiledStateGraph", "StateGraph"]


def _warn_invalid_state_schema(schema: Any) -> None:
    """Warn, as LangGraph does, when a state schema is a value rather than a type (a dict
    instance, a model instance): ``StateGraph(State)``, not ``StateGraph(State(...))``."""
    if isinstance(schema, type) or typing.get_args(schema):
        return
    warnings.warn(
        f"Invalid state_schema: {schema}. Expected a type or Annotated[type, reducer]; "
        "pass the class (StateGraph(State)), not a value of it",
        stacklevel=2,
    )


def _get_node_name(node: Any) -> str:
    """The name ``add_node(fn)`` gives a node: the function's, else its class's."""
    try:
        return str(getattr(node, "__name__", node.__class__.__name__))
    except AttributeError:
        raise TypeError(f"Unsupported node type: {type(node)}") from None
