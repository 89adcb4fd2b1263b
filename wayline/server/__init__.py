"""``wayline serve``: the LangGraph Platform HTTP API on wayline's durable runtime, API
keys, wayline's operator routes and a dashboard (``pip install 'wayline[server]'``).

Runs execute on wayline workers (in-process ones by default, or ``wayline worker``
processes), never in a request: a request records input, a worker runs it, and streams
follow the committed steps in the store."""

from __future__ import annotations

from wayline.server.app import ServerConfig, create_app
from wayline.server.serve import serve

__all__ = ["ServerConfig", "create_app", "serve"]
