"""``InMemorySaver`` as in ``langgraph.checkpoint.memory``: a store in a private
in-memory SQLite database, for tests and notebooks (nothing survives the process; pass
``wayline.connect("sqlite:///runs.db")`` or a ``postgresql://`` URL to keep runs)."""

from __future__ import annotations

from wayline.store import Store, open_store

__all__ = ["InMemorySaver", "MemorySaver"]


def InMemorySaver() -> Store:
    return open_store("sqlite:///:memory:")


MemorySaver = InMemorySaver
"""LangGraph's older name."""
