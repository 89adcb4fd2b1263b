"""A compiled graph's structural identity: what a worker must have to run a run.

A graph's name defaults to its state class's name, so two modules that each declare
``class State(TypedDict)`` compile graphs named ``State@1``: a name is a label, not an
identity. The *shape* lists what the engine relies on to continue a run exactly: the nodes,
the static edges and joins, each conditional edge's declared targets, every channel with its
kind, reducer (by qualified name) and data class, and the input and output keys. Its digest,
the *fingerprint*, is recorded on a run when it starts; a worker claims only runs whose name,
version and fingerprint it serves, and a graph whose shape differs from a run's is refused
with the first difference named.

What it cannot see: a node's body, a router's logic, a lambda reducer's code (two lambdas
have one qualified name). Changing those is a new ``version``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from wayline.errors import GraphMismatchError

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph
    from wayline.store.records import RunRecord

__all__ = ["check_identity", "describe_difference", "fingerprint_of", "shape_json", "shape_of"]


def _qualname(fn: Any) -> str:
    if fn is None:
        return ""
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:  # a callable object: its class names it
        name = type(fn).__qualname__
        module = type(fn).__module__
    return f"{module}.{name}" if module else str(name)


def shape_of(graph: CompiledGraph) -> dict[str, Any]:
    """The graph's shape as plain, sorted JSON data (stable across processes)."""
    channels: dict[str, str] = {}
    classes = graph.schema.classes
    for key, channel in sorted(graph.schema.channels.items()):
        desc = type(channel).__name__
        reducer = getattr(channel, "reducer", None)
        if reducer is not None:
            desc += f"({_qualname(reducer)})"
        if key in classes:
            desc += f"[{classes[key]}]"
        channels[key] = desc
    nodes: dict[str, str] = {}
    for name, spec in sorted(graph.nodes.items()):
        sub = getattr(spec.fn, "child", None)  # a compiled graph run as a node (SubgraphNode)
        child = getattr(sub, "fingerprint", None)
        nodes[name] = f"graph:{child}" if isinstance(child, str) else ""
        if spec.defer:  # it runs at another step: a run planned without it cannot go on
            nodes[name] += "+defer"
    branches: dict[str, list[list[str]]] = {}
    for src, items in sorted(graph.branches.items()):
        branches[src] = sorted(sorted(b.ends) if b.ends is not None else ["*"] for b in items)
    return {
        "nodes": nodes,
        "edges": sorted([src, dst] for src, dsts in graph.static_edges.items() for dst in dsts),
        "joins": sorted(
            [*b.sources, "->", k.rsplit(":", 1)[-1]] for k, b in graph.barriers.items()
        ),
        "branches": branches,
        "channels": channels,
        "input": sorted(graph.input_keys),
        "output": sorted(graph.output_keys),
    }


def fingerprint_of(shape: Mapping[str, Any]) -> str:
    """A short digest of a shape: equal shapes, equal fingerprints."""
    return hashlib.sha256(shape_json(shape).encode()).hexdigest()[:16]


def shape_json(shape: Mapping[str, Any]) -> str:
    """The shape as a run row stores it."""
    return json.dumps(shape, sort_keys=True, separators=(",", ":"))


class Shaped(Protocol):
    """What an identity check reads of a graph (a wayline graph, a LangGraph engine)."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def shape(self) -> Mapping[str, Any]: ...


def check_identity(run: RunRecord, graph: Shaped) -> None:
    """Refuse to continue ``run`` on ``graph`` unless the graph has the shape that started it
    (runs recorded before fingerprints, with '', are taken by name and version alone)."""
    if not run.fingerprint or run.fingerprint == graph.fingerprint:
        return
    try:
        recorded = json.loads(run.shape or "{}")
    except ValueError:
        recorded = {}
    raise GraphMismatchError(
        f"run {run.run_id!r} (tenant {run.tenant_id!r}) was started by a graph "
        f"{run.graph_name}@{run.graph_version} of another shape (fingerprint {run.fingerprint}, "
        f"this graph's is {graph.fingerprint}): {describe_difference(recorded, graph.shape)}. "
        "Run it on the graph that started it, or compile the new graph with a version of its "
        "own, register StateGraph.migrate(old, new, fn) and carry the run forward with "
        "Wayline(store).migrate(run_id, old_graph, new_graph); nothing was changed"
    )


def _label(desc: str) -> str:
    return desc.split("[", 1)[1].rstrip("]") if "[" in desc else "none"


def describe_difference(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    """The first differences between a run's recorded shape and a graph's, in words."""
    found: list[str] = []
    old_ch, new_ch = recorded.get("channels", {}), current.get("channels", {})
    for key in sorted(set(old_ch) | set(new_ch)):
        was, now = old_ch.get(key), new_ch.get(key)
        if was != now and was and now and was.split("[")[0] == now.split("[")[0]:
            found.append(
                f"channel {key!r} has other data classes: {_label(was)} when the run was "
                f"written, {_label(now)} in this graph"
            )
        elif was != now:
            found.append(
                f"channel {key!r} was {old_ch.get(key, 'absent')} when the run was written, "
                f"this graph has {new_ch.get(key, 'no such channel')}"
            )
    old_nodes, new_nodes = recorded.get("nodes", {}), current.get("nodes", {})
    gone = sorted(set(old_nodes) - set(new_nodes))
    added = sorted(set(new_nodes) - set(old_nodes))
    if gone:
        found.append(f"node(s) {gone} are not in this graph")
    if added:
        found.append(f"node(s) {added} are new in this graph")
    changed = sorted(k for k in set(old_nodes) & set(new_nodes) if old_nodes[k] != new_nodes[k])
    if changed:
        found.append(f"subgraph node(s) {changed} changed shape")
    for part, label in (
        ("edges", "edges"),
        ("joins", "joins"),
        ("branches", "conditional edges"),
        ("input", "input keys"),
        ("output", "output keys"),
    ):
        if recorded.get(part) != current.get(part):
            found.append(f"its {label} differ ({recorded.get(part)} -> {current.get(part)})")
    return "; ".join(found[:3]) if found else "the shapes differ"
