"""The dashboard at /ui: server-rendered HTML, no build step."""

from __future__ import annotations

from starlette.routing import BaseRoute

__all__ = ["routes"]


def routes() -> list[BaseRoute]:
    return []
