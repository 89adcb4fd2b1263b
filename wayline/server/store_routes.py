"""The LangGraph Platform's store routes (``/store/items``, ``/store/items/search``,
``/store/namespaces``), so ``langgraph-sdk``'s ``client.store.*`` works against
``wayline serve``. Every request is scoped to its API key's tenant: a key never reaches
another tenant's items. Reads need ``read``, puts and deletes ``execute``.

The store is a ``DurableStore`` on the server's database; its index (semantic search) is
the one a served graph was compiled with (``compile(store=DurableStore(..., index=...))``)
or the one ``langgraph.json``'s ``store.index`` gives its LangGraph graphs, else none."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.memory.durable import DurableStore
from wayline.server.http import ApiError, call, principal, read_json, reply

__all__ = ["routes"]


def _store(request: Request, scope: str) -> DurableStore:
    who = principal(request)
    who.require(scope)  # type: ignore[arg-type]
    service = request.app.state.service
    templates = [
        a.graph.memory_store
        for a in service.registry.assistants
        if isinstance(getattr(a.graph, "memory_store", None), DurableStore)
    ]  # one with an index first: a LangGraph graph's default store has none
    template = next((t for t in templates if t.index_config), templates[0] if templates else None)
    if isinstance(template, DurableStore):
        return template.bound(service.store, who.tenant)
    return DurableStore(service.store, tenant=who.tenant)


def _namespace(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ApiError(422, f'{what} must be a list of strings, e.g. ["users", "u1"]')
    return tuple(value)


def _int(body: dict[str, Any], name: str, default: int) -> int:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ApiError(422, f"{name} must be a whole number >= 0, not {value!r}")
    return value


def _refresh(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ApiError(422, f"refresh_ttl must be true or false, not {value!r}")


async def put_item(request: Request) -> Response:
    store = _store(request, "execute")
    body = await read_json(request, required=True)
    namespace = _namespace(body.get("namespace"), "namespace")
    key, value = body.get("key"), body.get("value")
    if not isinstance(key, str) or not key:
        raise ApiError(422, "key must be a non-empty string")
    if not isinstance(value, dict):
        raise ApiError(422, "value must be a JSON object")
    index = body.get("index")
    if not (
        index is None
        or index is False
        or (isinstance(index, list) and all(isinstance(i, str) for i in index))
    ):
        raise ApiError(422, "index must be false, a list of field paths, or absent")
    ttl = body.get("ttl")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
        raise ApiError(422, f"ttl must be a number of minutes > 0, not {ttl!r}")
    await call(_put, store, namespace, key, value, index, ttl)
    return Response(status_code=204)


def _put(
    store: DurableStore, ns: tuple[str, ...], key: str, value: Any, index: Any, ttl: Any
) -> None:
    try:
        store.put(ns, key, value, index, ttl=ttl, source="http")
    except ValueError as exc:  # InvalidNamespaceError: the client's namespace
        raise ApiError(422, str(exc)) from None


async def get_item(request: Request) -> Response:
    store = _store(request, "read")
    params = request.query_params
    key = params.get("key")
    raw = params.get("namespace")
    if not key or raw is None:
        raise ApiError(422, "send ?namespace=a.b&key=k (namespace labels joined by '.')")
    namespace = tuple(raw.split(".")) if raw else ()
    refresh = _refresh(params.get("refresh_ttl"))
    try:
        item = await call(store.get, namespace, key, refresh_ttl=refresh)
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    if item is None:
        raise ApiError(404, f"no item {key!r} in namespace {list(namespace)} for this tenant")
    return reply(item.dict())


async def delete_item(request: Request) -> Response:
    store = _store(request, "execute")
    body = await read_json(request, required=True)
    namespace = _namespace(body.get("namespace"), "namespace")
    key = body.get("key")
    if not isinstance(key, str) or not key:
        raise ApiError(422, "key must be a non-empty string")
    try:
        await call(store.delete, namespace, key)
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    return Response(status_code=204)


async def search_items(request: Request) -> Response:
    store = _store(request, "read")
    body = await read_json(request)
    prefix = _namespace(body.get("namespace_prefix", []), "namespace_prefix")
    flt = body.get("filter")
    if flt is not None and not isinstance(flt, dict):
        raise ApiError(422, "filter must be a JSON object")
    query = body.get("query")
    if query is not None and not isinstance(query, str):
        raise ApiError(422, "query must be a string")
    try:
        found = await call(
            store.search,
            prefix,
            query=query,
            filter=flt,
            limit=_int(body, "limit", 10),
            offset=_int(body, "offset", 0),
            refresh_ttl=_refresh(body.get("refresh_ttl")),
        )
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    return reply({"items": [i.dict() for i in found]})


async def list_namespaces(request: Request) -> Response:
    store = _store(request, "read")
    body = await read_json(request)
    prefix = body.get("prefix")
    suffix = body.get("suffix")
    max_depth = body.get("max_depth")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)):
        raise ApiError(422, "max_depth must be a whole number")
    try:
        found = await call(
            store.list_namespaces,
            prefix=None if prefix is None else _namespace(prefix, "prefix"),
            suffix=None if suffix is None else _namespace(suffix, "suffix"),
            max_depth=max_depth,
            limit=_int(body, "limit", 100),
            offset=_int(body, "offset", 0),
        )
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    return reply({"namespaces": [list(ns) for ns in found]})


def routes() -> list[BaseRoute]:
    return [
        Route("/store/items", put_item, methods=["PUT"]),
        Route("/store/items", get_item, methods=["GET"]),
        Route("/store/items", delete_item, methods=["DELETE"]),
        Route("/store/items/search", search_items, methods=["POST"]),
        Route("/store/namespaces", list_namespaces, methods=["POST"]),
    ]
