"""Running the app under uvicorn, with the loopback-only rule for ``--dev``."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from wayline.errors import WaylineError
from wayline.graph.compiled import CompiledGraph
from wayline.server.app import ServerConfig, create_app
from wayline.store.base import Store

__all__ = ["is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    store: Store,
    graphs: Mapping[str, CompiledGraph],
    *,
    host: str = "127.0.0.1",
    port: int = 8123,
    config: ServerConfig | None = None,
    log_level: str = "info",
) -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop the workers at a step boundary)."""
    import uvicorn

    config = config or ServerConfig()
    if config.dev and not is_loopback(host):
        raise WaylineError(
            f"--dev serves without API keys, so it listens only on loopback, not {host!r}: "
            "use --host 127.0.0.1, or create keys (wayline keys create) and drop --dev"
        )
    app = create_app(store, graphs, config)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
