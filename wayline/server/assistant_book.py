"""Which assistant a request names: a served graph (the default assistants, one per graph,
never stored) or one made over the API (``wayline.store.assistant_tables``: config,
context and metadata for a served graph, versioned). A run started on an assistant runs its
graph with the assistant's config and context, the run's own over them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from wayline.server.registry import Assistant, Registry, UnknownAssistant
from wayline.store.assistant_tables import AssistantRecord, AssistantTables

__all__ = ["AssistantBook", "assistant_json", "merged_config", "version_json"]


class AssistantBook:
    def __init__(self, registry: Registry, tables: AssistantTables) -> None:
        self.registry = registry
        self.tables = tables

    def served(self, key: str) -> Assistant | None:
        try:
            return self.registry.get(key)
        except UnknownAssistant:
            return None

    def stored(self, tenant: str, key: str) -> AssistantRecord | None:
        return self.tables.get(tenant, key) if key else None

    def resolve(self, tenant: str, key: str) -> tuple[Assistant, AssistantRecord | None]:
        """The served graph behind ``key`` (as an ``Assistant`` carrying ``key``'s id) and
        the stored assistant, if ``key`` names one; ``UnknownAssistant`` otherwise."""
        served = self.served(key)
        if served is not None:
            return served, None
        record = self.stored(tenant, key)
        if record is None:
            self.registry.get(key)  # raises, listing the served graphs
            raise AssertionError("unreachable")
        graph = self.served(record.graph_id)
        if graph is None:
            raise UnknownAssistant(
                f"assistant {key!r} runs graph {record.graph_id!r}, which this server does not "
                "serve: serve it, or point the assistant at a served graph (PATCH graph_id)"
            )
        return dataclasses.replace(graph, assistant_id=record.assistant_id), record


def merged_config(record: AssistantRecord | None, body: dict[str, Any]) -> dict[str, Any]:
    """``{"config", "context"}`` a run on ``record`` runs with: the run's config over the
    assistant's (``configurable`` merged key by key), the run's context, else the
    assistant's. Empty when neither gives any."""
    given = body.get("config") or {}
    base = record.config if record is not None else {}
    config = {**base, **given}
    configurable = {**(base.get("configurable") or {}), **(given.get("configurable") or {})}
    if configurable:
        config["configurable"] = configurable
    context = body.get("context")
    if context is None and record is not None and record.context:
        context = record.context
    out: dict[str, Any] = {}
    if config:
        out["config"] = config
    if context is not None:
        out["context"] = context
    return out


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat()


def version_json(r: AssistantRecord) -> dict[str, Any]:
    """One version, as ``/assistants/{id}/versions`` lists it in LangGraph."""
    return {
        "assistant_id": r.assistant_id,
        "version": r.version,
        "graph_id": r.graph_id,
        "config": r.config,
        "context": r.context,
        "metadata": r.metadata,
        "created_at": _iso(r.created_at),
        "name": r.name,
        "description": r.description,
    }


def assistant_json(r: AssistantRecord) -> dict[str, Any]:
    """A stored assistant in LangGraph's shape (the version in use)."""
    return {
        "assistant_id": r.assistant_id,
        "graph_id": r.graph_id,
        "config": r.config,
        "context": r.context,
        "metadata": r.metadata,
        "name": r.name,
        "created_at": _iso(r.created_at),
        "updated_at": _iso(r.updated_at),
        "version": r.version,
        "description": r.description,
    }
