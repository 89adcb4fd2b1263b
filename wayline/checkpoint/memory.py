"""``InMemorySaver`` as in ``langgraph.checkpoint.memory``: a store in a private
in-memory SQLite database, for tests and notebooks (nothing survives the process; pass
``wayline.connect("sqlite:///runs.db")`` or a ``postgresql://`` URL to keep runs)."""

from __future__ import annotations

from typing import Any

from wayline.store.sqlite import SQLiteStore

__all__ = ["InMemorySaver", "MemorySaver"]


class InMemorySaver(SQLiteStore):
    """A class, as LangGraph's, so ``isinstance`` checks and subclasses port unchanged.
    LangGraph's ``serde=`` and ``factory=`` are accepted and ignored: wayline's codec is
    fixed (msgpack, never pickle)."""

    def __init__(self, *, serde: Any = None, factory: Any = None) -> None:
        del serde, factory
        super().__init__(":memory:")


MemorySaver = InMemorySaver
"""LangGraph's older name."""
