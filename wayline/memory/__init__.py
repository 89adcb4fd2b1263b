"""Long-term memory: LangGraph's ``BaseStore`` (``wayline.memory.base``), its
``InMemoryStore`` (``wayline.memory.in_memory``), and ``DurableStore``, the store on the
runs' own database whose writes from a node commit with the node's step (docs/memory.md)."""

from __future__ import annotations

from wayline.memory.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from wayline.memory.durable import DurableStore
from wayline.memory.in_memory import InMemoryStore

__all__ = [
    "BaseStore",
    "DurableStore",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "PutOp",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
]
