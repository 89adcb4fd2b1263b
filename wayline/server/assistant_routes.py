"""The ``/assistants`` routes of LangGraph's API: the served graphs (the default
assistants, read-only) and assistants made over the API, created, changed (each change a
new version), pointed at an older version (``/latest``), listed by version, searched and
deleted. Shapes as ``langgraph dev`` (langgraph-api 0.16.7) answers them."""

from __future__ import annotations

import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.server.assistant_book import AssistantBook, assistant_json, version_json
from wayline.server.http import ApiError, call, principal, read_json, reply
from wayline.server.registry import Assistant
from wayline.server.service import Service, page
from wayline.store.assistant_tables import AssistantRecord

__all__ = ["routes"]


def _book(request: Request) -> AssistantBook:
    service: Service = request.app.state.service
    return service.assistants


def _object(body: dict[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError(422, f"{name} must be a JSON object, not {type(value).__name__}")
    return value


def _config_and_context(
    body: dict[str, Any], before: AssistantRecord | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """As LangGraph: a context is mirrored into ``config.configurable``; giving both is an
    error (context replaces configurable)."""
    config = _object(body, "config") if "config" in body else (before.config if before else {})
    if "context" in body and body["context"] is not None:
        context = _object(body, "context")
        if "configurable" in (body.get("config") or {}):
            raise ApiError(
                400,
                "Cannot specify both configurable and context. Prefer setting context alone.",
            )
        config = {**config, "configurable": dict(context)} if context else config
    else:
        context = before.context if before else {}
    return config, context


def _served_json(a: Assistant) -> dict[str, Any]:
    return a.to_json()


def _matches(item: dict[str, Any], body: dict[str, Any]) -> bool:
    metadata = _object(body, "metadata")
    if body.get("graph_id") is not None and item["graph_id"] != body["graph_id"]:
        return False
    if body.get("name") is not None and body["name"] not in (item["name"] or ""):
        return False
    return all(item["metadata"].get(k) == v for k, v in metadata.items())


def _all(book: AssistantBook, tenant: str) -> list[dict[str, Any]]:
    """Assistants made over the API, newest first, then the served graphs."""
    stored = [assistant_json(r) for r in book.tables.all(tenant)]
    return stored + [_served_json(a) for a in book.registry.assistants]


async def search(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    body = await read_json(request)
    book = _book(request)
    found = [a for a in await call(_all, book, who.tenant) if _matches(a, body)]
    limit, offset = page(body)
    return reply(found[offset : offset + limit])


async def count(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    body = await read_json(request)
    found = await call(_all, _book(request), who.tenant)
    return reply(sum(_matches(a, body) for a in found))


def _current(book: AssistantBook, tenant: str, key: str) -> dict[str, Any]:
    served = book.served(key)
    if served is not None:
        return _served_json(served)
    record = book.stored(tenant, key)
    if record is None:
        raise ApiError(404, f"Assistant {key} not found")
    return assistant_json(record)


async def get(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    return reply(await call(_current, _book(request), who.tenant, request.path_params["aid"]))


async def graph(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    assistant, _ = await call(_book(request).resolve, who.tenant, request.path_params["aid"])
    return reply(assistant.graph_json())


async def schemas(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    assistant, _ = await call(_book(request).resolve, who.tenant, request.path_params["aid"])
    return reply(assistant.schemas_json())


def _create(book: AssistantBook, tenant: str, body: dict[str, Any]) -> dict[str, Any]:
    graph_id = body.get("graph_id")
    if not isinstance(graph_id, str) or book.served(graph_id) is None:
        names = ", ".join(a.name for a in book.registry.assistants)
        raise ApiError(422, f"graph_id {graph_id!r} is not a served graph; serve one of: {names}")
    graph_id = book.registry.get(graph_id).name
    assistant_id = str(body.get("assistant_id") or uuid.uuid4())
    if book.served(assistant_id) is not None:
        raise ApiError(409, f"Assistant {assistant_id} already exists (a served graph's)")
    config, context = _config_and_context(body, None)
    now = time.time()
    name = body.get("name") or "Untitled"
    record = AssistantRecord(
        tenant_id=tenant,
        assistant_id=assistant_id,
        version=1,
        graph_id=graph_id,
        name=str(name),
        description=body.get("description"),
        config=config,
        context=context,
        metadata=_object(body, "metadata"),
        created_at=now,
        updated_at=now,
    )
    if not book.tables.create(record):
        if body.get("if_exists") == "do_nothing":
            return _current(book, tenant, assistant_id)
        raise ApiError(409, f"Assistant {assistant_id} already exists")
    return _current(book, tenant, assistant_id)


async def create(request: Request) -> Response:
    who = principal(request)
    who.require("execute")
    body = await read_json(request)
    return reply(await call(_create, _book(request), who.tenant, body))


def _stored_or_refuse(book: AssistantBook, tenant: str, key: str) -> AssistantRecord:
    if book.served(key) is not None:
        raise ApiError(
            409,
            f"assistant {key!r} is a served graph's and cannot be changed: create an "
            "assistant for its graph (POST /assistants) and change that",
        )
    record = book.stored(tenant, key)
    if record is None:
        raise ApiError(404, f"Assistant {key} not found")
    return record


def _patch(book: AssistantBook, tenant: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    before = _stored_or_refuse(book, tenant, key)
    graph_id = body.get("graph_id") or before.graph_id
    if book.served(graph_id) is None:
        raise ApiError(422, f"graph_id {graph_id!r} is not a served graph")
    config, context = _config_and_context(body, before)
    after = AssistantRecord(
        tenant_id=tenant,
        assistant_id=key,
        version=0,
        graph_id=book.registry.get(graph_id).name,
        name=str(body.get("name") or before.name),
        description=body.get("description", before.description),
        config=config,
        context=context,
        metadata={**before.metadata, **_object(body, "metadata")},
        created_at=before.created_at,
        updated_at=before.updated_at,
    )
    book.tables.add_version(after)
    return _current(book, tenant, key)


async def patch(request: Request) -> Response:
    who = principal(request)
    who.require("execute")
    body = await read_json(request)
    key = request.path_params["aid"]
    return reply(await call(_patch, _book(request), who.tenant, key, body))


def _delete(book: AssistantBook, tenant: str, key: str) -> None:
    _stored_or_refuse(book, tenant, key)
    book.tables.delete(tenant, key)


async def delete(request: Request) -> Response:
    who = principal(request)
    who.require("admin")
    await call(_delete, _book(request), who.tenant, request.path_params["aid"])
    return Response(status_code=204)


def _versions(
    book: AssistantBook, tenant: str, key: str, body: dict[str, Any]
) -> list[dict[str, Any]]:
    served = book.served(key)
    if served is not None:
        whole = _served_json(served)
        found = [{k: v for k, v in whole.items() if k != "updated_at"}]
    else:
        if book.stored(tenant, key) is None:
            raise ApiError(404, f"Assistant {key} not found")
        found = [version_json(r) for r in book.tables.versions(tenant, key)]
    metadata = _object(body, "metadata")
    found = [v for v in found if all(v["metadata"].get(k) == x for k, x in metadata.items())]
    limit, offset = page(body)
    return found[offset : offset + limit]


async def versions(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    body = await read_json(request)
    key = request.path_params["aid"]
    return reply(await call(_versions, _book(request), who.tenant, key, body))


def _latest(book: AssistantBook, tenant: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    _stored_or_refuse(book, tenant, key)
    version = body.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ApiError(422, f"send {{'version': N}} with a version number, not {version!r}")
    if not book.tables.set_version(tenant, key, version):
        raise ApiError(404, f"assistant {key} has no version {version}; list them at /versions")
    return _current(book, tenant, key)


async def latest(request: Request) -> Response:
    who = principal(request)
    who.require("execute")
    body = await read_json(request)
    key = request.path_params["aid"]
    return reply(await call(_latest, _book(request), who.tenant, key, body))


def routes() -> list[BaseRoute]:
    return [
        Route("/assistants", create, methods=["POST"]),
        Route("/assistants/search", search, methods=["POST"]),
        Route("/assistants/count", count, methods=["POST"]),
        Route("/assistants/{aid}", get, methods=["GET"]),
        Route("/assistants/{aid}", patch, methods=["PATCH"]),
        Route("/assistants/{aid}", delete, methods=["DELETE"]),
        Route("/assistants/{aid}/graph", graph, methods=["GET"]),
        Route("/assistants/{aid}/schemas", schemas, methods=["GET"]),
        Route("/assistants/{aid}/versions", versions, methods=["POST"]),
        Route("/assistants/{aid}/latest", latest, methods=["POST"]),
    ]
