"""A compiled LangGraph graph's structural identity, as ``wayline.graph.identity`` gives
wayline's own graphs one: what a worker must have to continue a LangGraph run.

The *shape* is what LangGraph's loop relies on to continue a thread from its checkpoints:
the nodes (a subgraph node by its own fingerprint), the edges as LangGraph draws them (a
conditional edge by its declared targets), every channel with its kind and reducer (by
qualified name), and the input and output channels. Its digest, the *fingerprint*, is
recorded on a run when it is queued; a worker claims only runs whose name, version and
fingerprint it serves, and ``check_identity`` refuses a run of another shape with the
first difference named.

What it cannot see, as for wayline's graphs: a node's body, a router's logic, a lambda
reducer's code. Changing those is a new ``version``.
"""

from __future__ import annotations

from typing import Any

from wayline.graph.identity import fingerprint_of

__all__ = ["lg_fingerprint", "lg_shape"]


def _qualname(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:  # a callable object: its class names it
        module, name = type(fn).__module__, type(fn).__qualname__
    return f"{module}.{name}" if module else str(name)


def _channel(channel: Any) -> str:
    desc = type(channel).__name__
    reducer = getattr(channel, "operator", None)  # BinaryOperatorAggregate
    return f"{desc}({_qualname(reducer)})" if reducer is not None else desc


def _names(given: Any) -> list[str]:
    return [given] if isinstance(given, str) else sorted(str(c) for c in given)


def lg_shape(graph: Any) -> dict[str, Any]:
    """The shape of a compiled LangGraph graph (``Pregel``) as plain, sorted JSON data."""
    nodes: dict[str, str] = {}
    for name, node in sorted(graph.nodes.items()):
        subs = [lg_fingerprint(s) for s in getattr(node, "subgraphs", None) or ()]
        nodes[name] = ",".join(f"graph:{s}" for s in subs)
    try:
        drawn = graph.get_graph()
        edges = sorted([e.source, e.target, bool(e.conditional)] for e in drawn.edges)
    except Exception:  # a graph that cannot be drawn: what triggers each node
        edges = sorted([*n.triggers, "->", name] for name, n in graph.nodes.items())
    return {
        "engine": "langgraph",
        "nodes": nodes,
        "edges": edges,
        "channels": {k: _channel(c) for k, c in sorted(graph.channels.items())},
        "input": _names(graph.input_channels),
        "output": _names(graph.output_channels),
    }


def lg_fingerprint(graph: Any) -> str:
    """The fingerprint of a compiled LangGraph graph: equal shapes, equal fingerprints."""
    return fingerprint_of(lg_shape(graph))
