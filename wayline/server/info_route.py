"""``GET /info``: what the server is, as LangGraph's answers it. Chat UIs (agent-chat-ui)
call it first to check that a LangGraph-API server is there; it needs a key like any
other route but ``/ok``."""

from __future__ import annotations

from importlib import metadata

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.server.http import principal, reply

__all__ = ["routes"]


def _version() -> str:
    try:
        return metadata.version("wayline")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0"


async def info(request: Request) -> Response:
    principal(request).require("read")
    return reply(
        {
            "version": _version(),
            "server": "wayline",
            "flags": {"assistants": True, "crons": False, "langsmith": False},
            "host": {"kind": "self-hosted"},
        }
    )


def routes() -> list[BaseRoute]:
    return [Route("/info", info, methods=["GET"])]
