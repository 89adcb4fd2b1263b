"""The graphs a server serves, each an assistant: ``NAME=module:attr`` on the command line.

Assistant ids are UUIDs derived from the name exactly as LangGraph's server derives them
(uuid5 in its graph namespace), so a client that stored an assistant id for a graph keeps
working when the server behind it changes; the name itself is accepted wherever an
assistant id is.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Mapping
from typing import Any

from wayline.graph.compiled import CompiledGraph
from wayline.graph.types import END, START
from wayline.store.records import RunRecord

__all__ = ["Assistant", "Registry", "UnknownAssistant"]

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""LangGraph's namespace for default assistant ids (langgraph_api.graph)."""


class UnknownAssistant(LookupError):
    """No served graph has this assistant id or name."""


@dataclasses.dataclass(frozen=True)
class Assistant:
    name: str
    graph: CompiledGraph
    """A wayline graph, or one with its shape (``wayline.langgraph.served``)."""
    assistant_id: str
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "assistant_id": self.assistant_id,
            "graph_id": self.name,
            "config": {},
            "context": {},
            "metadata": {"created_by": "system"},
            "name": self.name,
            "created_at": self.created_at,
            "updated_at": self.created_at,
            "version": 1,
            "description": None,
        }

    def graph_json(self) -> dict[str, Any]:
        """Nodes and edges in the shape of LangGraph's ``/assistants/{id}/graph``."""
        own = getattr(self.graph, "graph_json", None)
        if callable(own):  # a LangGraph graph draws itself (wayline.langgraph.served)
            drawn: dict[str, Any] = own()
            return drawn
        g = self.graph
        nodes: list[dict[str, Any]] = [
            {"id": START, "type": "runnable", "data": {"name": START}},
            *({"id": n, "type": "runnable", "data": {"name": n}} for n in g.nodes),
            {"id": END},
        ]
        edges: list[dict[str, Any]] = [
            {"source": src, "target": dst} for src, dsts in g.static_edges.items() for dst in dsts
        ]
        for srcs, dst in sorted(g.builder.waiting_edges):
            edges.extend({"source": s, "target": dst} for s in srcs)
        for src, branches in g.branches.items():
            for branch in branches:
                for end in branch.ends or ():
                    edges.append({"source": src, "target": end, "conditional": True})
        return {"nodes": nodes, "edges": edges}

    def schemas_json(self) -> dict[str, Any]:
        state = _json_schema(self.graph.schema.cls, f"{self.name}_state")
        return {
            "graph_id": self.name,
            "input_schema": state,
            "output_schema": state,
            "state_schema": state,
            "config_schema": {},
            "context_schema": None,
        }


def _json_schema(cls: type, title: str) -> dict[str, Any]:
    """The state's JSON schema (pydantic's, when pydantic is installed)."""
    try:
        from pydantic import TypeAdapter

        schema: dict[str, Any] = TypeAdapter(cls).json_schema()
    except Exception:  # no pydantic, or a type it cannot describe: keys only
        hints = getattr(cls, "__annotations__", {})
        schema = {"type": "object", "properties": {k: {} for k in hints}}
    schema["title"] = title
    return schema


class Registry:
    """Assistants by id and by name; which one serves a stored run."""

    def __init__(self, graphs: Mapping[str, CompiledGraph]) -> None:
        now = dt.datetime.now(dt.UTC).isoformat()
        self.assistants = [
            Assistant(name, graph, str(uuid.uuid5(NAMESPACE_GRAPH, name)), now)
            for name, graph in graphs.items()
        ]
        self._by_key = {a.assistant_id: a for a in self.assistants}
        self._by_key.update({a.name: a for a in self.assistants})

    def get(self, key: str) -> Assistant:
        found = self._by_key.get(key)
        if found is None:
            names = ", ".join(a.name for a in self.assistants)
            raise UnknownAssistant(
                f"no assistant {key!r}: use an assistant id from /assistants/search or one of "
                f"the served graphs: {names}"
            )
        return found

    def for_run(self, run: RunRecord) -> Assistant | None:
        """The assistant whose graph wrote ``run`` (same name, preferably same version)."""
        same = [a for a in self.assistants if a.graph.name == run.graph_name]
        exact = [a for a in same if a.graph.version == run.graph_version]
        found = exact or same
        return found[0] if found else None
