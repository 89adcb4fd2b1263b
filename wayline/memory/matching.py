"""The pure parts of a store's reads, shared by every backend so they answer alike: the
filter operators (JSONB-like, as LangGraph's), namespace patterns with ``"*"``, the texts
a put embeds, and cosine similarity for an exact scan."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from wayline.memory.base import ListNamespacesOp, MatchCondition, PutOp
from wayline.memory.embed import get_text_at_path, tokenize_path

__all__ = [
    "cosine",
    "does_match",
    "list_namespaces",
    "matches_filter",
    "texts_to_embed",
]


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    if not filter:
        return True
    return all(_compare(value.get(key), wanted) for key, wanted in filter.items())


def _compare(item_value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item_value, k, v) for k, v in wanted.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(wanted)
            and all(_compare(a, b) for a, b in zip(item_value, wanted, strict=False))
        )
    return bool(item_value == wanted)


def _operator(value: Any, operator: str, wanted: Any) -> bool:
    if operator == "$eq":
        return bool(value == wanted)
    if operator == "$ne":
        return bool(value != wanted)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        if value is None:
            return False
        a, b = float(value), float(wanted)
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[operator]
    raise ValueError(f"Unsupported operator: {operator}")


def does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or k == p for k, p in pairs)


def list_namespaces(
    op: ListNamespacesOp, found: Iterable[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """The page of namespaces ``op`` asks for, out of every namespace that holds an item."""
    spaces = [ns for ns in found if all(does_match(c, ns) for c in (op.match_conditions or ()))]
    if op.max_depth is not None:
        result = sorted({ns[: op.max_depth] for ns in spaces})
    else:
        result = sorted(set(spaces))
    return result[op.offset : op.offset + op.limit]


def texts_to_embed(op: PutOp, fields: Sequence[str] | None) -> list[tuple[str, str]]:
    """(path, text) pairs a put embeds: its own ``index`` paths, else the store's fields;
    none for a delete, ``index=False``, or a store without an index (``fields`` None)."""
    if op.value is None or op.index is False or fields is None:
        return []
    paths = list(op.index) if op.index is not None else list(fields or ["$"])
    out: list[tuple[str, str]] = []
    for path in paths:
        texts = get_text_at_path(op.value, path if path == "$" else tokenize_path(path))
        if len(texts) > 1:
            out.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
        elif texts:
            out.append((path, texts[0]))
    return out


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na > 0 and nb > 0 else 0.0
