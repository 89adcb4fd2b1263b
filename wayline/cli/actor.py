"""Who a command acts as, in the audit of operator actions."""

from __future__ import annotations

import getpass
import os

__all__ = ["operator_name"]


def operator_name() -> str:
    """``cli:`` and the OS user; the ``WAYLINE_ACTOR`` environment variable overrides it
    (a shared operations account should name the person)."""
    explicit = os.environ.get("WAYLINE_ACTOR")
    if explicit:
        return explicit
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"
