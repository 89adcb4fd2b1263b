"""The dashboard at /ui: server-rendered HTML and inline SVG, no script and no build step.
Sign in with an API key; everything shown and done is scoped to the key's tenant and done
as the key's actor."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from wayline.control.keys import Principal
from wayline.server.service import Service
from wayline.server.ui.pages import Dashboard
from wayline.server.ui.session import Sessions

__all__ = ["routes"]


def routes(
    service: Service, *, dev: Principal | None = None, worker: str | None = None
) -> list[BaseRoute]:
    d = Dashboard(service, Sessions(service.tables), dev)
    d.svc_worker = worker
    return [
        Route("/ui", d.index, methods=["GET"]),
        Route("/ui/login", d.login_page, methods=["GET"]),
        Route("/ui/login", d.login, methods=["POST"]),
        Route("/ui/logout", d.logout, methods=["POST"]),
        Route("/ui/runs", d.runs, methods=["GET"]),
        Route("/ui/runs/{rid}", d.run, methods=["GET"]),
        Route("/ui/approvals", d.approvals, methods=["GET"]),
        Route("/ui/approvals/decide", d.decide, methods=["POST"]),
        Route("/ui/reconcile", d.reconcile, methods=["GET"]),
        Route("/ui/effects/resolve", d.resolve, methods=["POST"]),
        Route("/ui/workers", d.workers, methods=["GET"]),
        Route("/ui/audit", d.audit, methods=["GET"]),
        Route("/ui/memory", d.memory, methods=["GET"]),
        Route("/ui/health", d.health, methods=["GET"]),
    ]
