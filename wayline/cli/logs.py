"""What the long-running commands (``wayline worker``, ``wayline serve``) log: wayline's
own notices (a worker moving to another CPU, a group commit retried run by run, retention
done, in-process workers stopped) on stderr, at INFO, one line each."""

from __future__ import annotations

import logging
import sys

__all__ = ["log_to_stderr"]


def log_to_stderr() -> None:
    """Show the ``wayline`` loggers' INFO lines on stderr (once; the library itself only
    logs, as a library should, and leaves showing them to the program)."""
    logger = logging.getLogger("wayline")
    if any(getattr(h, "wayline_cli", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    handler.wayline_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
