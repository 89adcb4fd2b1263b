"""Which engine runs a graph (``engine_for``): wayline's own for a compiled wayline graph,
LangGraph's for a LangGraph graph (imported only then: ``langgraph`` is an extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wayline.errors import ConfigError
from wayline.graph.compiled import CompiledGraph
from wayline.worker.engine import Engine, WaylineEngine

__all__ = ["engine_for", "engines_for"]


def engine_for(graph: Any) -> Engine:
    """The engine of a graph a worker serves or a client starts: a wayline graph, an
    engine already, or a LangGraph graph (``CompiledStateGraph``, an ``@entrypoint``)."""
    if isinstance(graph, CompiledGraph):
        return WaylineEngine(graph)
    if isinstance(graph, Engine):
        return graph
    if type(graph).__module__.startswith("langgraph."):
        from wayline.langgraph.engine import LangGraphEngine

        return LangGraphEngine(graph)
    raise ConfigError(
        f"a {type(graph).__name__} is not a graph wayline can run: give a compiled wayline "
        "graph, a LangGraph CompiledStateGraph or @entrypoint, or an Engine"
    )


def engines_for(graphs: Any) -> list[Engine]:
    """``engine_for`` of one graph or each of a sequence."""
    if isinstance(graphs, Sequence) and not isinstance(graphs, str):
        return [engine_for(g) for g in graphs]
    return [engine_for(graphs)]
