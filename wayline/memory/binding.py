"""How a graph is given its long-term memory store: the check ``compile(store=)`` and
``entrypoint(store=)`` make, so a wrong value fails at compile time, not in a node."""

from __future__ import annotations

from typing import Any

from wayline.errors import GraphError

__all__ = ["check_memory_store"]


def check_memory_store(store: Any, where: str) -> None:
    """``store`` must be None or a store with LangGraph's ``batch``/``abatch`` (wayline's
    ``wayline.memory`` stores, or LangGraph's own, which a node then uses as it is)."""
    if store is None:
        return
    if not (callable(getattr(store, "batch", None)) and callable(getattr(store, "abatch", None))):
        raise GraphError(
            f"{where}: {type(store).__name__} is not a long-term memory store; pass a "
            "wayline.memory store (DurableStore(url) on the runs' database, or "
            "InMemoryStore()), or a LangGraph BaseStore"
        )
