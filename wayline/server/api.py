"""The LangGraph Platform routes ``langgraph-sdk`` uses: threads, state,
history, runs (background, wait, stream, join, cancel), stateless runs. Same paths, same
fields, same status values, same SSE event names; each handler is a thin shell over
``Service`` (run in a worker thread) and ``RunWatch``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.control.keys import Principal
from wayline.server.http import ApiError, call, principal, read_json, reply
from wayline.server.multitask import NOT_STARTED
from wayline.server.service import RunStart, Service, page
from wayline.server.sse import EventStream
from wayline.server.stream import RunWatch, open_watch, reads_emitted, run_meta, sse_events
from wayline.server.views import FINAL, run_json
from wayline.store.server_tables import ThreadRunRecord

__all__ = ["routes"]


def _svc(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


# -- threads ------------------------------------------------------------------------------


async def threads_create(request: Request) -> Response:
    who = principal(request)
    who.require("execute")
    body = await read_json(request)
    return reply(await call(_svc(request).create_thread, who, body))


async def threads_search(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    body = await read_json(request)
    return reply(await call(_svc(request).search_threads, who, body))


async def threads_count(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    await read_json(request)
    return reply(await call(_svc(request).count_threads, who))


async def thread_get(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    return reply(await call(_svc(request).thread_view, who, request.path_params["tid"]))


async def thread_patch(request: Request) -> Response:
    who = principal(request)
    who.require("execute")
    body = await read_json(request)
    return reply(await call(_svc(request).patch_thread, who, request.path_params["tid"], body))


async def thread_delete(request: Request) -> Response:
    who = principal(request)
    await call(_svc(request).delete_thread, who, request.path_params["tid"])
    return Response(status_code=204)


async def state_get(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    cid = request.path_params.get("cid")
    return reply(await call(_svc(request).state, who, request.path_params["tid"], cid))


async def state_at_checkpoint(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    body = await read_json(request, required=True)
    checkpoint = body.get("checkpoint") or {}
    cid = checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else None
    return reply(await call(_svc(request).state, who, request.path_params["tid"], cid))


async def state_update(request: Request) -> Response:
    who = principal(request)
    body = await read_json(request, required=True)
    return reply(await call(_svc(request).update_state, who, request.path_params["tid"], body))


async def history(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    body = await read_json(request)
    return reply(await call(_svc(request).history, who, request.path_params["tid"], body))


# -- runs ---------------------------------------------------------------------------------


def _locations(start: RunStart, suffix: str) -> dict[str, str]:
    base = f"/threads/{start.record.thread_id}/runs/{start.record.run_id}"
    return {"Location": f"{base}{suffix}", "Content-Location": base}


async def _start(request: Request) -> RunStart:
    who = principal(request)
    body = await read_json(request, required=True)
    return await call(_svc(request).start_run, who, request.path_params.get("tid"), body)


async def runs_create(request: Request) -> Response:
    who, svc = principal(request), _svc(request)
    body = await read_json(request, required=True)
    tid = request.path_params.get("tid")

    def started() -> tuple[RunStart, dict[str, Any]]:  # one hop to a thread, not two
        start = svc.start_run(who, tid, body)
        return start, svc.run_view(who, start.record)

    start, view = await call(started)
    headers = _locations(start, "")
    headers.pop("Location")
    return reply(view, headers=headers)


async def runs_wait(request: Request) -> Response:
    start = await _start(request)
    body = await _join(request, start.record)
    return reply(body, headers=_locations(start, "/join"))


async def _join(request: Request, rec: ThreadRunRecord) -> dict[str, Any]:
    """Wait for one API run to end (queued ones start first) and return what it left."""
    who = principal(request)
    svc = _svc(request)
    return await _until(svc, who.tenant, rec.thread_id, lambda: svc.joined(who, rec))


async def _wait(request: Request, thread_id: str) -> dict[str, Any]:
    who = principal(request)
    svc = _svc(request)
    return await _until(svc, who.tenant, thread_id, lambda: svc.outcome(who, thread_id))


async def _until(
    svc: Service, tenant: str, thread_id: str, read: Callable[[], dict[str, Any] | None]
) -> dict[str, Any]:
    """``read()`` (in a worker thread) until it answers, again each time the thread's run
    moves (the bell), or every ``stream_fallback`` seconds for moves nobody announces."""
    waiter = svc.bell.subscribe(tenant, thread_id)
    try:
        while True:
            waiter.clear()  # a move from here on wakes the wait below
            body = await call(read)
            if body is not None:
                return body
            await waiter.wait(svc.stream_fallback)
    finally:
        waiter.close()


async def runs_stream(request: Request) -> Response:
    start = await _start(request)
    rec = start.record
    svc, who = _svc(request), principal(request)
    watch = open_watch(
        svc.store,
        start.assistant.graph,
        rec.tenant_id,
        rec.thread_id,
        rec.start_step,
        show_start=start.resumed,
        emitted=reads_emitted(rec.kwargs["stream_mode"]),
    )
    _bound(watch, svc, who, rec)
    watch.meta = run_meta(rec, start.assistant.name)
    subgraphs = bool(rec.kwargs.get("stream_subgraphs"))
    events = sse_events(
        watch,
        rec.run_id,
        rec.kwargs["stream_mode"],
        subgraphs=subgraphs,
        bell=svc.bell,
        fallback=svc.stream_fallback,
    )
    if rec.kwargs.get("on_disconnect") == "cancel":
        events = _cancel_on_disconnect(request, events, rec.thread_id, rec.run_id)
    return EventStream(
        events, headers={**_locations(start, "/stream"), "Cache-Control": "no-store"}
    )


async def _cancel_on_disconnect(
    request: Request, events: AsyncIterator[bytes], tid: str, rid: str
) -> AsyncIterator[bytes]:
    """``on_disconnect="cancel"``: a client that goes away before the run ends cancels it
    (its finished steps stay). The default, ``continue``, lets the run go on."""
    finished = False
    try:
        async for event in events:
            yield event
        finished = True
    finally:
        if not finished:
            with (
                anyio.CancelScope(shield=True),
                contextlib.suppress(ApiError),
            ):  # finished meanwhile
                await call(_svc(request).cancel, principal(request), tid, rid, "interrupt")


async def run_get(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    svc = _svc(request)
    tid, rid = request.path_params["tid"], request.path_params["rid"]
    if not svc.store.quick_reads:
        return reply(await call(lambda: svc.run_view(who, svc.run_record(who, tid, rid))))
    # SQLite: the record is two indexed reads that wait for no writer, made here (the SDK
    # reads the run after every stream); a live run's status is worked out in a thread, as
    # working it out may record how it ended
    rec = svc.run_record(who, tid, rid)
    if rec.status in FINAL:
        return reply(run_json(rec, rec.status))
    return reply(await call(svc.run_view, who, rec))


async def runs_list(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    q = request.query_params
    limit, offset = page(q)
    views = await call(
        _svc(request).list_runs,
        who,
        request.path_params["tid"],
        limit=limit,
        offset=offset,
        status=q.get("status"),
    )
    return reply(views)


async def run_join(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    svc = _svc(request)
    tid, rid = request.path_params["tid"], request.path_params["rid"]
    rec = await call(svc.run_record, who, tid, rid)
    body = await _join(request, rec)  # a later run moved the thread on: what this one left
    base = f"/threads/{tid}/runs/{rid}"
    return reply(body, headers={"Location": f"{base}/join", "Content-Location": base})


async def run_join_stream(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    svc = _svc(request)
    tid, rid = request.path_params["tid"], request.path_params["rid"]
    rec = await call(svc.run_record, who, tid, rid)
    assistant, _ = await call(svc.assistants.resolve, who.tenant, rec.assistant_id)
    end = await call(svc.end_step, who, rec)
    watch = open_watch(
        svc.store,
        assistant.graph,
        who.tenant,
        tid,
        rec.start_step,
        show_start=bool(rec.kwargs.get("resumed")),  # as its first stream did: same ids
        end_step=end,
    )
    _bound(watch, svc, who, rec)
    modes = request.query_params.getlist("stream_mode") or rec.kwargs.get("stream_mode")
    watch.emitted = reads_emitted(modes or ())
    watch.meta = run_meta(rec, assistant.name)
    last = request.headers.get("last-event-id", "")
    base = f"/threads/{tid}/runs/{rid}"
    return EventStream(
        sse_events(
            watch,
            rid,
            list(modes or ["values"]),
            after=int(last) if last.isdigit() else 0,
            subgraphs=bool(rec.kwargs.get("stream_subgraphs")),
            bell=svc.bell,
            fallback=svc.stream_fallback,
        ),
        headers={
            "Location": f"{base}/stream",
            "Content-Location": base,
            "Cache-Control": "no-store",
        },
    )


def _bound(watch: RunWatch, svc: Service, who: Principal, rec: ThreadRunRecord) -> None:
    """A queued run's stream starts where its input reached the thread; any run's stream
    ends where a run queued behind it took the thread on."""
    if rec.start_step == NOT_STARTED:
        watch.starts = lambda: svc.start_step(who, rec)
    watch.ends = lambda: svc.queued_end(who, rec)
    if svc.store.quick_reads:  # SQLite: recording how it ended queues a write for the
        watch.ended = lambda run: svc.record_end(who, rec, run)  # next commit, no wait


async def run_cancel(request: Request) -> Response:
    who = principal(request)
    svc = _svc(request)
    tid, rid = request.path_params["tid"], request.path_params["rid"]
    await read_json(request)
    action = request.query_params.get("action", "interrupt")
    await call(svc.cancel, who, tid, rid, action)
    if request.query_params.get("wait") in ("1", "true", "True"):
        await _wait(request, tid)
    return Response(status_code=202 if request.query_params.get("wait") is None else 204)


async def ok(request: Request) -> Response:
    return reply({"ok": True})


def routes() -> list[BaseRoute]:
    """The platform's routes, first among the app's and the busiest first: a request is
    matched against each route in turn (a streamed run makes three requests: these)."""
    return [
        Route("/threads", threads_create, methods=["POST"]),
        Route("/threads/{tid}/runs/stream", runs_stream, methods=["POST"]),
        Route("/threads/{tid}/runs/{rid}", run_get, methods=["GET"]),
        Route("/ok", ok, methods=["GET"]),
        Route("/threads/search", threads_search, methods=["POST"]),
        Route("/threads/count", threads_count, methods=["POST"]),
        Route("/threads/{tid}", thread_get, methods=["GET"]),
        Route("/threads/{tid}", thread_patch, methods=["PATCH"]),
        Route("/threads/{tid}", thread_delete, methods=["DELETE"]),
        Route("/threads/{tid}/state", state_get, methods=["GET"]),
        Route("/threads/{tid}/state", state_update, methods=["POST"]),
        Route("/threads/{tid}/state/checkpoint", state_at_checkpoint, methods=["POST"]),
        Route("/threads/{tid}/state/{cid}", state_get, methods=["GET"]),
        Route("/threads/{tid}/history", history, methods=["POST"]),
        Route("/threads/{tid}/runs", runs_create, methods=["POST"]),
        Route("/threads/{tid}/runs", runs_list, methods=["GET"]),
        Route("/threads/{tid}/runs/wait", runs_wait, methods=["POST"]),
        Route("/threads/{tid}/runs/{rid}/join", run_join, methods=["GET"]),
        Route("/threads/{tid}/runs/{rid}/stream", run_join_stream, methods=["GET"]),
        Route("/threads/{tid}/runs/{rid}/cancel", run_cancel, methods=["POST"]),
        Route("/runs", runs_create, methods=["POST"]),
        Route("/runs/wait", runs_wait, methods=["POST"]),
        Route("/runs/stream", runs_stream, methods=["POST"]),
    ]
