"""``get_graph()``: a compiled graph's nodes and edges, drawn as Mermaid (in LangGraph's
format) or as plain text."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from wayline.graph.types import END, START

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["DrawableGraph", "Edge"]

_RUNNABLE = ("langgraph", "_internal", "_runnable", "RunnableCallable")
_HEADER = """---
config:
  flowchart:
    curve: linear
---
graph TD;"""
_FOOTER = """\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc"""


@dataclasses.dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    data: str | None = None
    conditional: bool = False


def _key(e: Edge) -> tuple[str, str, bool, str]:
    return (e.source, e.target, e.conditional, e.data or "")


@dataclasses.dataclass(frozen=True, slots=True)
class DrawableGraph:
    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]

    @classmethod
    def of(cls, graph: CompiledGraph) -> DrawableGraph:
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
                edges.extend(Edge(name, dst, None, True) for dst in spec.ends)
        has_out = {e.source for e in edges}
        edges.extend(Edge(n, END) for n in names if n not in has_out)
        # LangGraph's order: every edge sorted, then the unconditional edges into END.
        ends = sorted((e for e in edges if e.target == END and not e.conditional), key=_key)
        edges = [*sorted((e for e in edges if e not in ends), key=_key), *ends]
        used = {e.target for e in edges} | {e.source for e in edges}
        nodes = (START, *names, *((END,) if END in used else ()))
        first = {(e.source, e.target): e for e in reversed(edges)}  # one edge per pair
        return cls(nodes, tuple(dict.fromkeys(first[e.source, e.target] for e in edges)))

    def draw_mermaid(self, *, with_styles: bool = True) -> str:
        # Without styles LangGraph (langchain-core) draws the edges alone.
        lines = [_HEADER if with_styles else "graph TD;"]
        for node in self.nodes if with_styles else ():
            if node == START:
                lines.append(f"\t{node}([<p>{node}</p>]):::first")
            elif node == END:
                lines.append(f"\t{node}([<p>{node}</p>]):::last")
            else:
                lines.append(f"\t{node}({node})")
        for e in self.edges:
            if e.conditional and e.data:
                lines.append(f"\t{e.source} -. &nbsp;{e.data}&nbsp; .-> {e.target};")
            elif e.conditional:
                lines.append(f"\t{e.source} -.-> {e.target};")
            else:
                lines.append(f"\t{e.source} --> {e.target};")
        if with_styles:
            lines.append(_FOOTER)
        return "\n".join(lines) + "\n"

    def to_json(self, *, with_schemas: bool = False) -> dict[str, list[dict[str, Any]]]:
        """The nodes and edges in the shape of LangGraph's ``Graph.to_json()`` (a node's
        ``data.id`` names the class LangGraph would run it with)."""
        nodes: list[dict[str, Any]] = []
        for node in self.nodes:
            if node == END:
                nodes.append({"id": node})
            else:
                data = {"id": list(_RUNNABLE), "name": node}
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
