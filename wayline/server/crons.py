"""The LangGraph Platform cron routes ``client.crons.*`` calls: create (stateless, or for a
thread), search, count, update (PATCH) and delete, over ``wayline.store.schedules``.

A cron is a schedule whose ticks the server shows as API runs: each tick's fire (by any
worker serving the graph, once however many do; docs/wakeups.md) queues the run's input
and records its thread and API run in the same transaction. A stateless cron's tick runs
on a new thread of its own; a thread's cron hands that thread each tick's input.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.control.keys import Principal
from wayline.errors import ConfigError
from wayline.graph.checkpoint import encode_inbox
from wayline.server.http import ApiError, call, principal, read_json, reply
from wayline.server.jsonable import iso
from wayline.server.registry import Assistant, UnknownAssistant
from wayline.server.service import (
    Service,
    _emitted_modes,
    _modes,
    _names,
    _object,
    page,
)
from wayline.store.schedules import ScheduleRecord, Schedules

__all__ = ["routes"]

CRON_STRATEGIES = ("enqueue",)
"""``multitask_strategy`` a cron takes: a tick on a busy thread waits behind its run. The
others would have the worker that fires the tick wait for a run to stop: refused (422)."""
SORTABLE = ("cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date")


def _svc(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


def _book(svc: Service) -> Schedules:
    book = Schedules(svc.tables.store)
    return book


def _assistant(svc: Service, body: dict[str, Any]) -> Assistant:
    try:
        return svc.registry.get(str(body.get("assistant_id") or ""))
    except UnknownAssistant as exc:
        raise ApiError(422, str(exc.args[0])) from None


def _end_at(body: dict[str, Any]) -> float | None:
    given = body.get("end_time")
    if given is None:
        return None
    try:
        when = dt.datetime.fromisoformat(str(given))
    except ValueError:
        raise ApiError(422, f"end_time must be an ISO 8601 date-time, not {given!r}") from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def _refused(svc: Service, body: dict[str, Any]) -> None:
    """What a create or an update may not ask for (422, never silently ignored)."""
    svc._check_webhook(body)  # each tick's run tells it, as a run created with webhook=
    if body.get("on_run_completed") not in (None, "keep"):
        raise ApiError(
            422,
            f"on_run_completed {body['on_run_completed']!r} is not supported by wayline serve: "
            "a tick's thread is kept ('keep'); delete one with DELETE /threads/{thread_id}",
        )
    _strategy(body)


def _checked(svc: Service, body: dict[str, Any]) -> None:
    _refused(svc, body)
    if not isinstance(body.get("schedule"), str):
        raise ApiError(422, "schedule must be a cron expression such as '0 9 * * 1-5'")
    _object(body, "metadata")
    _object(body, "config")


def _strategy(body: dict[str, Any]) -> dict[str, str]:
    """The cron's ``multitask_strategy`` as its ticks' API runs record it ({}: none given)."""
    given = body.get("multitask_strategy")
    if not given:
        return {}
    if given not in CRON_STRATEGIES:
        raise ApiError(
            422,
            f"multitask_strategy {given!r} is not supported on crons by wayline serve: "
            "give 'enqueue' (a tick on a busy thread waits for its run) or none",
        )
    return {"multitask_strategy": str(given)}


def _inbox(assistant: Assistant, body: dict[str, Any]) -> bytes:
    breakpoints = (_names(body, "interrupt_before"), _names(body, "interrupt_after"))
    codec = assistant.graph.codec
    modes = _emitted_modes(body)
    return encode_inbox(
        codec, body.get("input") or {}, breakpoints, modes, webhook=body.get("webhook")
    )


def _api(who: Principal, assistant: Assistant, body: dict[str, Any]) -> dict[str, Any]:
    """What the server records for each tick's run (its API run's metadata and kwargs)."""
    return {
        "assistant_id": assistant.assistant_id,
        "metadata": {
            **_object(body, "metadata"),
            "graph_id": assistant.name,
            "assistant_id": assistant.assistant_id,
        },
        "thread_metadata": {"graph_id": assistant.name, "assistant_id": assistant.assistant_id},
        "kwargs": {
            "input": None,
            "command": None,
            "stream_mode": _modes(body),
            "durability": body.get("durability") or "sync",
            "actor": who.actor,
            "interrupt_before": _names(body, "interrupt_before"),
            "interrupt_after": _names(body, "interrupt_after"),
            "resumed": False,
            "on_disconnect": "continue",
            **_strategy(body),
        },
        "payload": {k: v for k, v in body.items() if k not in ("schedule", "timezone")},
        "user_id": who.actor,
    }


def cron_json(s: ScheduleRecord) -> dict[str, Any]:
    api = s.api or {}
    return {
        "cron_id": s.schedule_id,
        "assistant_id": api.get("assistant_id"),
        "thread_id": s.thread_id,
        "on_run_completed": (api.get("payload") or {}).get("on_run_completed"),
        "end_time": None if s.end_at is None else iso(s.end_at),
        "schedule": s.cron,
        "timezone": s.timezone,
        "created_at": iso(s.created_at),
        "updated_at": iso(s.updated_at),
        "payload": api.get("payload") or {},
        "user_id": api.get("user_id"),
        "next_run_date": None if s.next_at is None else iso(s.next_at),
        "metadata": s.metadata,
        "enabled": s.enabled,
    }


def create(who: Principal, svc: Service, thread_id: str | None, body: dict[str, Any]) -> Any:
    who.require("execute")
    _checked(svc, body)
    assistant = _assistant(svc, body)
    if thread_id is not None:
        if svc.tables.get_thread(who.tenant, thread_id) is None:
            raise ApiError(404, f"Thread with ID {thread_id} not found")
        run = svc.store.get_run(who.tenant, thread_id)
        if run is not None and run.graph_name != assistant.graph.name:
            raise ApiError(
                409,
                f"thread {thread_id} belongs to graph {run.graph_name!r}, not {assistant.name!r}",
            )
    durability = body.get("durability") or "sync"
    if durability not in ("sync", "async", "exit"):
        raise ApiError(422, f"durability must be sync, async or exit, not {durability!r}")
    graph = assistant.graph
    try:
        made = _book(svc).create(
            who.tenant,
            str(uuid.uuid4()),
            graph_name=graph.name,
            graph_version=graph.version,
            schema_version=graph.schema_version,
            durability=durability,
            inbox=_inbox(assistant, body),
            cron=body["schedule"],
            timezone=body.get("timezone") or "UTC",
            thread_id=thread_id,
            enabled=body.get("enabled") is not False,
            end_at=_end_at(body),
            api=_api(who, assistant, body),
            metadata=_object(body, "metadata"),
            fingerprint=getattr(graph, "fingerprint", ""),
            shape=getattr(graph, "shape_json", None),
            engine=getattr(graph, "kind", "wayline"),
        )
    except ConfigError as exc:
        raise ApiError(422, str(exc)) from None
    return cron_json(made)


def _matches(s: ScheduleRecord, body: dict[str, Any], svc: Service) -> bool:
    if s.api is None:
        return False  # a client's schedule (Wayline.schedule) is not an API cron
    aid = body.get("assistant_id")
    if aid is not None:
        try:
            wanted = svc.registry.get(str(aid)).assistant_id
        except UnknownAssistant:
            return False
        if s.api.get("assistant_id") != wanted:
            return False
    if body.get("thread_id") is not None and s.thread_id != body["thread_id"]:
        return False
    if body.get("enabled") is not None and s.enabled != bool(body["enabled"]):
        return False
    metadata = _object(body, "metadata")
    return all(s.metadata.get(k) == v for k, v in metadata.items())


def search(who: Principal, svc: Service, body: dict[str, Any]) -> list[dict[str, Any]]:
    who.require("read")
    limit, offset = page(body)
    found = [cron_json(s) for s in _all(who, svc) if _matches(s, body, svc)]
    key = body.get("sort_by") or "created_at"
    if key not in SORTABLE:
        raise ApiError(422, f"sort_by must be one of {', '.join(SORTABLE)}, not {key!r}")
    found.sort(
        key=lambda c: (c[key] is None, c[key] or ""), reverse=body.get("sort_order") == "desc"
    )
    picked = found[offset : offset + limit]
    select = body.get("select")
    if isinstance(select, list):
        picked = [{k: c[k] for k in select if k in c} for c in picked]
    return picked


def _all(who: Principal, svc: Service) -> list[ScheduleRecord]:
    return _book(svc).search(who.tenant, limit=100_000)


def count(who: Principal, svc: Service, body: dict[str, Any]) -> int:
    who.require("read")
    return sum(1 for s in _all(who, svc) if _matches(s, body, svc))


def update(who: Principal, svc: Service, cron_id: str, body: dict[str, Any]) -> Any:
    who.require("execute")
    book = _book(svc)
    old = book.get(who.tenant, cron_id)
    if old is None or old.api is None:
        raise ApiError(404, f"Cron {cron_id} not found")
    _refused(svc, body)
    payload = {
        **(old.api.get("payload") or {}),
        **{k: v for k, v in body.items() if k != "schedule"},
    }
    assistant = _assistant(svc, payload)
    merged = {**payload, "schedule": body.get("schedule") or old.cron}
    try:
        done = book.update(
            who.tenant,
            cron_id,
            cron=body.get("schedule"),
            timezone=body.get("timezone"),
            enabled=None if body.get("enabled") is None else bool(body["enabled"]),
            end_at=_end_at(body) if body.get("end_time") is not None else None,
            clear_end="end_time" in body and body["end_time"] is None,
            inbox=_inbox(assistant, payload) if {"input", "webhook"} & body.keys() else None,
            api={**_api(who, assistant, merged), "user_id": old.api.get("user_id")},
            metadata=_object(body, "metadata") if "metadata" in body else None,
        )
    except ConfigError as exc:
        raise ApiError(422, str(exc)) from None
    assert done is not None
    return cron_json(done)


def delete(who: Principal, svc: Service, cron_id: str) -> None:
    who.require("execute")
    book = _book(svc)
    old = book.get(who.tenant, cron_id)
    if old is None or old.api is None or not book.delete(who.tenant, cron_id):
        raise ApiError(404, f"Cron {cron_id} not found")


# -- the routes ---------------------------------------------------------------------------


async def crons_create(request: Request) -> Response:
    body = await read_json(request, required=True)
    return reply(await call(create, principal(request), _svc(request), None, body))


async def thread_crons_create(request: Request) -> Response:
    body = await read_json(request, required=True)
    tid = request.path_params["tid"]
    return reply(await call(create, principal(request), _svc(request), tid, body))


async def crons_search(request: Request) -> Response:
    body = await read_json(request)
    return reply(await call(search, principal(request), _svc(request), body))


async def crons_count(request: Request) -> Response:
    body = await read_json(request)
    return reply(await call(count, principal(request), _svc(request), body))


async def cron_patch(request: Request) -> Response:
    body = await read_json(request, required=True)
    cid = request.path_params["cid"]
    return reply(await call(update, principal(request), _svc(request), cid, body))


async def cron_delete(request: Request) -> Response:
    await call(delete, principal(request), _svc(request), request.path_params["cid"])
    return Response(status_code=204)


def routes() -> list[BaseRoute]:
    return [
        Route("/runs/crons", crons_create, methods=["POST"]),
        Route("/runs/crons/search", crons_search, methods=["POST"]),
        Route("/runs/crons/count", crons_count, methods=["POST"]),
        Route("/runs/crons/{cid}", cron_patch, methods=["PATCH"]),
        Route("/runs/crons/{cid}", cron_delete, methods=["DELETE"]),
        Route("/threads/{tid}/runs/crons", thread_crons_create, methods=["POST"]),
    ]
