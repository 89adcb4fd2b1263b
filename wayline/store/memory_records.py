"""The records of long-term memory (``wayline.memory``) as the store holds them: a write
(put or delete) that goes into a step's commit or the caller's own transaction, and a row
read back with its provenance."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["MemoryRow", "MemoryWrite", "encode_value", "join_namespace", "split_namespace"]


def join_namespace(namespace: tuple[str, ...]) -> str:
    """The stored form of a namespace: labels joined by ``.`` (a label cannot hold one)."""
    return ".".join(namespace)


def split_namespace(stored: str) -> tuple[str, ...]:
    return tuple(stored.split(".")) if stored else ()


def encode_value(value: Mapping[str, Any]) -> bytes:
    """An item's value as stored: JSON (a memory is a document, never pickled)."""
    return json.dumps(dict(value), separators=(",", ":"), ensure_ascii=False).encode()


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryWrite:
    """A put (``value`` set) or a delete (``value`` None) of one item. ``vectors``: the
    embeddings of its indexed texts, computed before the commit (an embedding is a model
    call, not something to redo inside a transaction). ``node``/``step`` name the step of
    the run that wrote it; ``source`` is a caller's own reference."""

    namespace: tuple[str, ...]
    key: str
    value: bytes | None
    vectors: tuple[tuple[str, tuple[float, ...]], ...] = ()
    ttl_minutes: float | None = None
    node: str | None = None
    step: int | None = None
    source: str | None = None
    subject: str | None = None
    cls: str | None = None
    observed_at: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryRow:
    """An item read back, with where it came from and whether it still holds."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    expires_at: float | None = None
    ttl_minutes: float | None = None
    run_id: str | None = None
    step: int | None = None
    node: str | None = None
    source: str | None = None
    observed_at: float | None = None
    subject: str | None = None
    cls: str | None = None
    invalidated_at: float | None = None
    invalid_reason: str | None = None
    version: int | None = None
    """A history row's version (None: the live item)."""
    ended: str | None = None
    """A history row's end: superseded, deleted or invalidated (with the reason)."""
