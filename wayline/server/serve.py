"""Running the app under uvicorn, with the loopback-only rule for ``--dev``."""

from __future__ import annotations

import gc
import ipaddress
from collections.abc import Mapping
from types import FrameType

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
    bell = app.state.service.bell

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            bell.close_streams()  # open streams end now, not when the grace period runs out
            super().handle_exit(sig, frame)

    settle_heap()
    options = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5
    )
    server = Server(options)
    server.run()
    if not server.started:  # uvicorn logged why (the port taken, most often)
        raise WaylineError(
            f"could not serve on {host}:{port} (uvicorn's error is above): "
            "free the port or pass another with --port"
        )


def settle_heap() -> None:
    """Move what starting up allocated (modules, graphs, the app: about 55,000 objects
    serving the bench's graph) out of the collector's reach (``gc.freeze``): a full
    collection while serving then walks only what requests and runs allocate (5,000
    objects after 200 runs), not the startup heap again (a full collection over it took
    100 ms and more on the loaded bench machine)."""
    gc.collect()
    gc.freeze()
