"""``get_graph()``: a compiled graph's nodes and edges, drawn as Mermaid (in LangGraph's
format) or as plain text."""

from __future__ import annotations

import dataclasses
import string
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from wayline.graph.types import END, START
from wayline.porting import PORTS

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["DrawableGraph", "Edge"]

_RUNNABLE = ("langgraph", "_internal", "_runnable", "RunnableCallable")
_SUBGRAPH = ("langgraph", "graph", "state", "CompiledStateGraph")
_HEADER = """---
config:
  flowchart:
    curve: linear
---
graph TD;"""
_FOOTER = """\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc"""


class Edge(NamedTuple):
    """An edge as langchain-core's ``Edge`` (a named tuple of the same fields, so the two
    compare equal)."""

    source: str
    target: str
    data: str | None = None
    conditional: bool = False


_LANGGRAPH_MODULES = {wayline: langgraph for langgraph, wayline in PORTS.items()}


def _runnable_id(fn: Any) -> tuple[str, ...] | None:
    """LangGraph's ``to_json`` id of a node that is a Runnable: a serializable one's
    ``lc_id()``, else its class's module and name (a wayline class named by the LangGraph
    module it ports, ``wayline.prebuilt.tool_node`` -> ``langgraph.prebuilt.tool_node``);
    None for anything else (a function: LangGraph's ``RunnableCallable``)."""
    core = sys.modules.get("langchain_core.runnables")
    if core is None or not isinstance(fn, core.Runnable):
        return None
    if isinstance(fn, core.RunnableSerializable):
        return tuple(fn.lc_id())
    cls = type(fn)
    module = _LANGGRAPH_MODULES.get(cls.__module__, cls.__module__)
    return (*module.split("."), cls.__name__)


def _key(e: Edge) -> tuple[str, str, bool, str]:
    return (e.source, e.target, e.conditional, e.data or "")


@dataclasses.dataclass(frozen=True, slots=True)
class DrawableGraph:
    nodes: tuple[str, ...]
    edges: list[Edge]
    """In drawing order; a list, as LangGraph's ``Graph.edges``."""
    subgraphs: frozenset[str] = frozenset()
    """The nodes that run a compiled graph (drawn as one node unless ``xray``)."""
    runnables: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(node, LangGraph's class id) of each node that is a langchain-core Runnable itself
    (a ``ToolNode``, a chat model, a ``RunnableLambda``): ``to_json`` names its class."""

    @classmethod
    def of(cls, graph: CompiledGraph, *, xray: int | bool = False) -> DrawableGraph:
        """The graph's nodes and edges; with ``xray`` (True: every level, n: n levels) each
        node that runs a subgraph is replaced by that subgraph's nodes, ``node:inner``."""
        flat = cls._flat(graph)
        if not xray:
            return flat
        nodes, edges = list(flat.nodes), list(flat.edges)
        deeper = xray if isinstance(xray, bool) else xray - 1
        for name, child in graph.subgraph_nodes():
            sub = cls.of(child, xray=deeper)
            nodes, edges = _expand(nodes, edges, name, list(sub.nodes), list(sub.edges))
        kept = tuple((n, k) for n, k in flat.runnables if n in nodes)
        return cls(tuple(nodes), edges, frozenset(flat.subgraphs & set(nodes)), kept)

    @classmethod
    def _flat(cls, graph: CompiledGraph) -> DrawableGraph:
        b = graph.builder
        names = list(b.nodes)
        edges: list[Edge] = [Edge(s, d) for s, d in sorted(b.edges)]
        for srcs, dst in sorted(b.waiting_edges):
            edges.extend(Edge(s, dst) for s in srcs)
        for src, branches in b.branches.items():
            for branch in branches:
                if branch.path_map is not None:
                    for key, dst in branch.path_map.items():
                        label = None if key == dst else str(key)
                        edges.append(Edge(src, dst, label, True))
                else:
                    for dst in branch.ends or (*names, END):
                        edges.append(Edge(src, dst, None, True))
        for name, spec in b.nodes.items():
            if spec.ends:
                labels = dict(spec.end_labels)
                edges.extend(Edge(name, dst, labels.get(dst), True) for dst in spec.ends)
        has_out = {e.source for e in edges}
        edges.extend(Edge(n, END) for n in names if n not in has_out)
        # LangGraph's order: every edge sorted, then the unconditional edges into END.
        ends = sorted((e for e in edges if e.target == END and not e.conditional), key=_key)
        edges = [*sorted((e for e in edges if e not in ends), key=_key), *ends]
        if not any(e.target == END for e in edges):  # a loop with no way out drawn
            edges.extend(_loop_exit(edges))
        used = {e.target for e in edges} | {e.source for e in edges}
        nodes = (START, *names, *((END,) if END in used else ()))
        first = {(e.source, e.target): e for e in reversed(edges)}  # one edge per pair
        unique = list(dict.fromkeys(first[e.source, e.target] for e in edges))
        subgraphs = frozenset(name for name, _ in graph.subgraph_nodes())
        runnables = tuple(
            (name, kind)
            for name, spec in b.nodes.items()
            if name not in subgraphs
            and (kind := _runnable_id(getattr(spec.fn, "lc_runnable", spec.fn))) is not None
        )
        return cls(nodes, unique, subgraphs, runnables)

    def draw_mermaid(self, *, with_styles: bool = True) -> str:
        """Mermaid as langchain-core draws LangGraph's graphs: node ids made safe (``\\3a``
        for ``:``), an xray'd subgraph's nodes and edges in a ``subgraph`` block; without
        styles, the edges alone."""
        first, last = _first(self.nodes, self.edges), _last(self.nodes, self.edges)
        lines = [_HEADER if with_styles else "graph TD;"]
        inner: dict[str, list[str]] = {}
        for node in self.nodes:
            if ":" in node:
                inner.setdefault(node.rsplit(":", 1)[0], []).append(node)
            elif with_styles:
                lines.append(_node_line(node, first, last))
        groups: dict[str, list[Edge]] = {}
        for e in self.edges:
            pairs = zip(e.source.split(":"), e.target.split(":"), strict=False)
            groups.setdefault(":".join(a for a, b in pairs if a == b), []).append(e)
        seen: set[str] = set()

        def block(edges: list[Edge], prefix: str) -> None:
            loop = len(edges) == 1 and edges[0].source == edges[0].target
            if prefix and not loop:
                seen.add(prefix.rsplit(":", 1)[-1])
                lines.append(f"\tsubgraph {prefix.rsplit(':', 1)[-1]}")
                if with_styles:
                    lines.extend(_node_line(n, first, last) for n in inner.get(prefix, ()))
            lines.extend(_edge_line(e) for e in edges)
            for nested, nested_edges in groups.items():
                rest = nested[len(prefix) + 1 :]
                if nested.startswith(prefix + ":") and nested != prefix and ":" not in rest:
                    block(nested_edges, nested)
            if prefix and not loop:
                lines.append("\tend")

        block(groups.get("", []), "")
        for prefix, edges in groups.items():
            if prefix and ":" not in prefix:
                block(edges, prefix)
                seen.add(prefix)
        for prefix, members in inner.items() if with_styles else ():
            if ":" not in prefix and prefix not in seen:  # a subgraph without inner edges
                lines.extend(
                    [
                        f"\tsubgraph {prefix}",
                        *(_node_line(n, first, last) for n in members),
                        "\tend",
                    ]
                )
                seen.add(prefix)
        if with_styles:
            lines.append(_FOOTER)
        return "\n".join(lines) + "\n"

    def to_json(self, *, with_schemas: bool = False) -> dict[str, list[dict[str, Any]]]:
        """The nodes and edges in the shape of LangGraph's ``Graph.to_json()`` (a node's
        ``data.id`` names the class LangGraph would run it with)."""
        nodes: list[dict[str, Any]] = []
        runnables = dict(self.runnables)
        for node in self.nodes:
            if node == END or node.endswith(f":{END}"):
                nodes.append({"id": node})
            else:
                kind = _SUBGRAPH if node in self.subgraphs else runnables.get(node, _RUNNABLE)
                data = {"id": list(kind), "name": node}
                nodes.append({"id": node, "type": "runnable", "data": data})
        edges: list[dict[str, Any]] = []
        for e in self.edges:
            edge: dict[str, Any] = {"source": e.source, "target": e.target}
            if e.data is not None:
                edge["data"] = e.data
            if e.conditional:
                edge["conditional"] = True
            edges.append(edge)
        return {"nodes": nodes, "edges": edges}

    def draw_ascii(self) -> str:
        """One line per edge (``a --> b``, ``a -.-> b`` when conditional); needs no
        layout library (LangGraph's needs grandalf)."""
        width = max(len(n) for n in self.nodes)
        rows = []
        for e in self.edges:
            arrow = "-.->" if e.conditional else "--->"
            label = f"  [{e.data}]" if e.data else ""
            rows.append(f"{e.source.ljust(width)} {arrow} {e.target}{label}")
        return "\n".join(rows) + "\n"

    def print_ascii(self) -> None:
        print(self.draw_ascii())


def _loop_exit(edges: list[Edge]) -> list[Edge]:
    """LangGraph's drawing walks the graph 250 steps from START; when no edge leads to
    END and that walk ends on one node, a conditional edge from it to END is drawn."""
    frontier = {START}
    for _ in range(250):
        reached = {e.target for e in edges if e.source in frontier}
        if not reached:
            break
        frontier = reached
    return [Edge(frontier.pop(), END, None, True)] if len(frontier) == 1 else []


def _first(nodes: Sequence[str], edges: Sequence[Edge], exclude: str = "") -> str | None:
    """The one node no edge leads to (langchain-core's ``first_node``), or None."""
    targets = {e.target for e in edges if e.source != exclude}
    found = [n for n in nodes if n != exclude and n not in targets]
    return found[0] if len(found) == 1 else None


def _last(nodes: Sequence[str], edges: Sequence[Edge], exclude: str = "") -> str | None:
    """The one node no edge leaves (langchain-core's ``last_node``), or None."""
    sources = {e.source for e in edges if e.target != exclude}
    found = [n for n in nodes if n != exclude and n not in sources]
    return found[0] if len(found) == 1 else None


def _expand(
    nodes: list[str], edges: list[Edge], name: str, sub_nodes: list[str], sub_edges: list[Edge]
) -> tuple[list[str], list[Edge]]:
    """Node ``name`` replaced by its subgraph, as LangGraph's ``draw_graph`` does: the
    subgraph's START and END are dropped when one edge leaves (enters) them and another
    node takes their place; edges into ``name`` go to the subgraph's first node, edges out
    of it leave its last."""
    if len(sub_nodes) <= 1 or name not in nodes:
        return nodes, edges
    if _first(sub_nodes, sub_edges) is None or _last(sub_nodes, sub_edges) is None:
        return nodes, edges
    for pick, side in ((_first, "source"), (_last, "target")):
        end = pick(sub_nodes, sub_edges)
        touching = {e for e in sub_edges if getattr(e, side) == end}
        if end is not None and pick(sub_nodes, sub_edges, end) and len(touching) == 1:
            sub_nodes = [n for n in sub_nodes if n != end]
            sub_edges = [e for e in sub_edges if end not in (e.source, e.target)]
    first, last = _first(sub_nodes, sub_edges), _last(sub_nodes, sub_edges)

    def p(node: str) -> str:
        return f"{name}:{node}"

    out_nodes = [n for n in nodes if n != name] + [p(n) for n in sub_nodes]
    out_edges = [Edge(p(e.source), p(e.target), e.data, e.conditional) for e in sub_edges]
    rewired = [
        e._replace(
            source=p(str(last)) if e.source == name else e.source,
            target=p(str(first)) if e.target == name else e.target,
        )
        for e in edges
    ]
    return out_nodes, rewired + out_edges


_MARKDOWN = "*_`"
_SAFE = frozenset(string.ascii_letters + string.digits + "_-")


def _safe_id(node: str) -> str:
    """A Mermaid node id as langchain-core writes it: other characters as ``\\<hex>``."""
    return "".join(c if c in _SAFE else f"\\{ord(c):x}" for c in node)


def _node_line(node: str, first: str | None, last: str | None) -> str:
    name = node.rsplit(":", 1)[-1]
    label = f"<p>{name}</p>" if name[:1] in _MARKDOWN and name[-1:] in _MARKDOWN else name
    if node == first:
        return f"\t{_safe_id(node)}([{label}]):::first"
    if node == last:
        return f"\t{_safe_id(node)}([{label}]):::last"
    return f"\t{_safe_id(node)}({label})"


def _edge_line(e: Edge) -> str:
    if e.conditional and e.data:
        return f"\t{_safe_id(e.source)} -. &nbsp;{e.data}&nbsp; .-> {_safe_id(e.target)};"
    if e.data:
        return f"\t{_safe_id(e.source)} -- &nbsp;{e.data}&nbsp; --> {_safe_id(e.target)};"
    if e.conditional:
        return f"\t{_safe_id(e.source)} -.-> {_safe_id(e.target)};"
    return f"\t{_safe_id(e.source)} --> {_safe_id(e.target)};"
