"""The ASGI application: routes, API-key authentication, errors as JSON, and the
in-process workers that execute runs (none with ``workers=0``: then ``wayline worker``
processes do, on this machine or any other sharing the store)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from wayline.control.keys import Principal, authenticate
from wayline.effects.retry import RetryPolicy
from wayline.errors import AuthError, ConfigError, WaylineError
from wayline.graph.compiled import CompiledGraph
from wayline.server import (
    api,
    assistant_routes,
    crons,
    data_routes,
    info_route,
    operator,
    store_routes,
)
from wayline.server.bell import Bell
from wayline.server.http import ApiError, call, error_response
from wayline.server.registry import Registry, UnknownAssistant
from wayline.server.service import Service
from wayline.store import observe
from wayline.store.base import Store
from wayline.store.server_tables import ServerTables, server_tables
from wayline.worker import Worker, WorkerConfig
from wayline.worker.notify import WebhookNotifier

__all__ = ["DEV_PRINCIPAL", "ServerConfig", "create_app"]

log = logging.getLogger("wayline.server")

DEV_PRINCIPAL = Principal(tenant="default", actor="dev", scopes=("admin",))
"""Who a request is in ``--dev`` mode when it sends no key (loopback only)."""
OPEN_PATHS = ("/ok",)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """How ``wayline serve`` behaves. Readable back from ``app.state.config``."""

    workers: int = 4
    """Runs executed at a time by in-process workers; 0 leaves execution to others."""
    dev: bool = False
    """Requests without a key act as tenant ``default``, actor ``dev`` (loopback only)."""
    max_body_bytes: int = 1 << 20
    lease_seconds: float = 30.0
    heartbeat_every: float = 0.5
    """Short, so that a cancel reaches a running run within about half a second."""
    key_cache_seconds: float = 2.0
    """A key is looked up at most this often; a revocation takes effect within it."""
    ui: bool = True
    cors_origins: tuple[str, ...] = ()
    """Browser origins allowed to call the API (a chat UI served elsewhere); none by default."""
    otel: bool = False
    """Trace runs, steps, nodes, effects and commits and record metrics through the global
    OpenTelemetry providers (``pip install 'wayline[otel]'``; a no-op without it)."""
    webhook_secret: str | None = None
    """Signs the POSTs to a run's ``webhook=`` (``wayline.worker.notify``); None: a run
    created with ``webhook=`` is refused (422), as nobody could verify what it is told."""
    stream_fallback: float = 0.1
    """Seconds between a stream's reads of its run while nothing announces a move: streams
    wake when their run commits in this process, or by NOTIFY from PostgreSQL workers whose
    store announces (``?announce=1``); this timer finds the commits of anything else
    (``wayline.server.stream``)."""
    verify_rate: float = 0.0
    """Finished runs the in-process workers verify a minute, in turn (``wayline worker
    --verify-rate``: reconstructed and compared with the digest each committed; a divergence
    is audited and on the dashboard). 0: none; it needs ``workers`` > 0."""


class KeyAuth:
    """Pure ASGI middleware: every request but ``/ok`` (and the dashboard, which signs in
    with a key itself) needs a live ``x-api-key``; the key's principal rides in the scope."""

    def __init__(self, app: ASGIApp, tables: ServerTables, config: ServerConfig) -> None:
        self.app = app
        self.tables = tables
        self.config = config
        self._cache: dict[str, tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in OPEN_PATHS or path == "/ui" or path.startswith("/ui/"):
            await self.app(scope, receive, send)
            return
        key = dict(scope["headers"]).get(b"x-api-key")
        try:
            if not key and self.config.dev:
                who = DEV_PRINCIPAL
            else:  # a key looked up lately answers on the loop; else one hop for the read
                text = key.decode() if key else None
                hit = self.cached(text)
                who = hit if hit is not None else await call(self.principal, text)
        except AuthError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = who
        await self.app(scope, receive, send)

    def cached(self, key: str | None) -> Principal | None:
        """The key's principal if it was looked up less than ``key_cache_seconds`` ago."""
        if not key:
            return None
        with self._lock:
            hit = self._cache.get(key)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    def principal(self, key: str | None) -> Principal:
        now = time.monotonic()
        hit = self.cached(key)
        if hit is not None:
            return hit
        who = authenticate(self.tables, key)
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key or ""] = (now + self.config.key_cache_seconds, who)
        return who


async def _api_error(request: Request, exc: Exception) -> Response:
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = exc.detail
    if exc.status_code == 404:
        detail = f"Not Found: no route {request.method} {request.url.path}"
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)


def create_app(
    store: Store,
    graphs: Mapping[str, CompiledGraph],
    config: ServerConfig | None = None,
) -> Starlette:
    """The server over ``store``, serving ``graphs`` (assistant name -> graph)."""
    config = config or ServerConfig()
    if not graphs:
        raise WaylineError("wayline serve needs at least one graph: NAME=module:attr")
    if config.verify_rate < 0 or (config.verify_rate > 0 and config.workers == 0):
        raise ConfigError(
            f"verify_rate={config.verify_rate} needs in-process workers (workers > 0) and a "
            "rate of 0 or more: with --workers 0 give --verify-rate to wayline worker"
        )
    bound = {name: g.with_store(store) for name, g in graphs.items()}
    if config.otel:
        from wayline.otel import instrument

        bound = instrument(store, bound)
    tables = server_tables(store)
    service = Service(store, tables, Registry(bound))
    service.webhooks = config.webhook_secret is not None
    service.stream_fallback = config.stream_fallback
    worker: Worker | None = None
    if config.workers > 0:
        unique = {(g.name, g.version): g for g in bound.values()}
        worker = Worker(
            store,
            list(unique.values()),
            WorkerConfig(
                concurrency=config.workers,
                lease_seconds=config.lease_seconds,
                heartbeat_every=config.heartbeat_every,
                poll_interval=0.25,
                retry=RetryPolicy(max_attempts=1),  # an API run fails as it fails (no rerun)
                notifier=None
                if config.webhook_secret is None
                else WebhookNotifier(url=None, secret=config.webhook_secret),
                verify_rate=config.verify_rate,
            ),
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        _ring(service.bell, store)
        thread = None
        if worker is not None:
            thread = threading.Thread(target=worker.run, name="wayline-serve-worker", daemon=True)
            thread.start()
        try:
            yield
        finally:
            service.bell.stop()
            if worker is not None and thread is not None:
                worker.stop()
                await call(thread.join, 30)
                g = worker.group.stats
                log.info(
                    "in-process workers stopped after %d run executions (%d step commits in "
                    "%d transactions; %d server writes rode them)",
                    worker.completed,
                    g.commits,
                    g.transactions,
                    getattr(getattr(store, "inner", store), "rides", 0),
                )

    routes = api.routes() + crons.routes() + operator.routes() + data_routes.routes()
    routes += store_routes.routes()  # /store/*: long-term memory (wayline.memory)
    routes += assistant_routes.routes() + info_route.routes()
    if config.ui:
        from wayline.server.ui import routes as ui_routes

        routes += ui_routes(
            service,
            dev=DEV_PRINCIPAL if config.dev else None,
            worker=worker.owner if worker is not None else None,
        )
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ApiError: _api_error,
            WaylineError: _api_error,
            UnknownAssistant: _api_error,
            HTTPException: _http_error,
        },
    )
    app.state.config = config
    app.state.service = service
    app.state.worker = worker
    app.add_middleware(KeyAuth, tables=tables, config=config)
    if config.cors_origins:  # outermost: a preflight carries no key and must pass
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["x-api-key", "content-type", "last-event-id"],
            expose_headers=["location", "content-location"],
        )
    return app


def _ring(bell: Bell, store: Store) -> None:
    """Ring ``bell`` with the runs this process's stores move and, on PostgreSQL, with
    those that announcing workers elsewhere move (a listening thread, one connection)."""
    observe.listen_runs(bell.ring)
    bell.stops.append(lambda: observe.unlisten_runs(bell.ring))
    listen = getattr(store, "listen_runs", None)
    if callable(listen):
        stopping = threading.Event()
        thread = threading.Thread(
            target=listen, args=(bell.ring, stopping), name="wayline-serve-runs", daemon=True
        )
        thread.start()
        bell.stops.append(stopping.set)


def dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))
