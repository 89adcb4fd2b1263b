"""Request and response plumbing shared by every route: JSON bodies read with a size
limit, errors as ``{"detail": ...}`` with the status a client can act on, and blocking
store calls moved off the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wayline.control.keys import Principal
from wayline.errors import (
    ApprovalRefused,
    AuthError,
    CorruptionError,
    EffectError,
    ResumeError,
    RunNotFoundError,
    ScopeError,
    StoreFullError,
    VersionMismatchError,
    WaylineError,
)
from wayline.server.registry import UnknownAssistant

__all__ = ["ApiError", "call", "error_response", "principal", "read_json", "reply"]

T = TypeVar("T")


class ApiError(Exception):
    """An answer other than 2xx, with what the client should do in ``detail``."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(detail)


def reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


def error_response(exc: BaseException) -> Response:
    status, detail = _status_of(exc)
    return JSONResponse({"detail": detail}, status_code=status)


def _status_of(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, ApiError):
        return exc.status, exc.detail
    if isinstance(exc, AuthError):
        return exc.status, str(exc)
    if isinstance(exc, UnknownAssistant):
        return 404, str(exc.args[0])
    if isinstance(exc, RunNotFoundError):
        return 404, str(exc)
    if isinstance(exc, ApprovalRefused | ScopeError):
        return 403, str(exc)
    if isinstance(exc, ResumeError | VersionMismatchError | EffectError):
        return 409, str(exc)
    if isinstance(exc, CorruptionError):  # the server's data, not the request: the detail
        return 500, str(exc)  # names the row an operator restores
    if isinstance(exc, StoreFullError):
        return 507, str(exc)
    if isinstance(exc, WaylineError):
        return 400, str(exc)
    return 500, f"internal error: {type(exc).__name__}"


def principal(request: Request) -> Principal:
    found: Principal | None = request.scope.get("state", {}).get("principal")
    if found is None:  # the auth middleware lets only /ok and /ui through without one
        raise AuthError("no API key: send one in the x-api-key header")
    return found


async def read_json(request: Request, *, required: bool = False) -> dict[str, Any]:
    """The body as a JSON object. An empty body is ``{}`` unless ``required``; anything
    but ``application/json`` is 415, bad JSON 422, too large 413 (counted as it arrives,
    so a body without a Content-Length cannot grow past the limit either)."""
    limit: int = request.app.state.config.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body of {declared} bytes is over the {limit}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body is over the {limit}-byte limit")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        if required:
            raise ApiError(422, "this request needs a JSON object body")
        return {}
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != "application/json":
        raise ApiError(
            415, f"send JSON with content-type: application/json (got {kind or 'none'!r})"
        )
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(422, f"Invalid JSON in request body: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(422, f"the body must be a JSON object, not {type(data).__name__}")
    return data


CALL_THREADS = 40
"""Store calls in flight at once (anyio's default limit, which ``call`` used before)."""


def _new_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="wayline-call")  # threads: lazy


_pool = _new_pool()


def _forget_pool() -> None:
    """In a forked child: the parent's threads are not there, so the pool starts anew."""
    global _pool
    _pool = _new_pool()


os.register_at_fork(after_in_child=_forget_pool)


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking store call in a worker thread (the event loop keeps serving), in the
    caller's context. A request cancelled meanwhile unwinds once the call has returned, as
    with ``anyio.to_thread``, whose hop cost the event loop about three times this one's
    CPU (80 against 27 us here, measured under uvloop), five hops a streamed run."""
    job = _pool.submit(contextvars.copy_context().run, functools.partial(fn, *args, **kwargs))
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        if not job.cancel():  # running: let it return before the caller unwinds
            await asyncio.wait([asyncio.wrap_future(job)])
        raise
