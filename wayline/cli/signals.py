"""Stopping a long-running command on SIGTERM or SIGINT, once."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

__all__ = ["stop_on_signals"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(stop: Callable[[], None]) -> None:
    """Call ``stop`` on the first SIGTERM or SIGINT; ignore the ones after it.

    A worker under ``wayline worker --processes``, systemd or ``timeout`` gets each stop
    signal more than once (its process group's and its parent's). Python runs a handler
    between two bytecodes of the main thread, so a second one could run while the first
    held the stop ``Event``'s lock, and wait for it forever (seen: a worker that never
    exited). Ignoring further signals before anything takes a lock closes that window.
    """

    def handler(signum: int, frame: Any) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        stop()

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
