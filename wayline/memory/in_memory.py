"""``InMemoryStore``, as ``langgraph.store.memory``: a dictionary-backed ``BaseStore`` with
optional vector search, for tests and single-process programs (nothing survives the
process; ``wayline.memory.DurableStore`` is the durable one)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from wayline.memory.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from wayline.memory.embed import Embedder, ensure_embeddings
from wayline.memory.matching import cosine, list_namespaces, matches_filter, texts_to_embed

__all__ = ["InMemoryStore"]

Key = tuple[tuple[str, ...], str]


class InMemoryStore(BaseStore):
    """LangGraph's ``InMemoryStore``: reads of a batch see the store before its puts."""

    __slots__ = ("_data", "_vectors", "embeddings", "index_config")

    def __init__(self, *, index: IndexConfig | None = None) -> None:
        self._data: dict[tuple[str, ...], dict[str, Item]] = defaultdict(dict)
        self._vectors: dict[Key, dict[str, list[float]]] = {}
        self.index_config: dict[str, Any] | None = dict(index) if index else None
        self.embeddings: Embedder | None = ensure_embeddings(index.get("embed")) if index else None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        queries = self._queries(ops)
        vectors = {q: self.embeddings.embed_query(q) for q in queries} if self.embeddings else {}
        results = self._reads(ops, vectors)
        puts = _last_puts(ops)
        texts = self._texts(puts)
        if texts and self.embeddings:
            found = self.embeddings.embed_documents([t for _, _, t in texts])
            self._store_vectors(texts, found)
        self._apply(puts, {k for k, _, _ in texts})
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        queries = self._queries(ops)
        vectors: dict[str, list[float]] = {}
        if self.embeddings:
            found = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries))
            vectors = dict(zip(queries, found, strict=True))
        results = self._reads(ops, vectors)
        puts = _last_puts(ops)
        texts = self._texts(puts)
        if texts and self.embeddings:
            docs = await self.embeddings.aembed_documents([t for _, _, t in texts])
            self._store_vectors(texts, docs)
        self._apply(puts, {k for k, _, _ in texts})
        return results

    def _queries(self, ops: list[Op]) -> list[str]:
        return sorted({op.query for op in ops if isinstance(op, SearchOp) and op.query})

    def _reads(self, ops: list[Op], vectors: dict[str, list[float]]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._data[op.namespace].get(op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, vectors))
            elif isinstance(op, ListNamespacesOp):
                results.append(list_namespaces(op, [ns for ns, d in self._data.items() if d]))
            elif isinstance(op, PutOp):
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results

    def _search(self, op: SearchOp, vectors: dict[str, list[float]]) -> list[SearchItem]:
        n = len(op.namespace_prefix)
        found = [
            item
            for ns, items in list(self._data.items())
            if ns[:n] == op.namespace_prefix
            for item in items.values()
            if matches_filter(item.value, op.filter)
        ]
        if not (op.query and self.embeddings):
            return [_hit(item, None) for item in found[op.offset : op.offset + op.limit]]
        query = vectors[op.query]
        scored: list[tuple[float, Item]] = []
        scoreless: list[Item] = []
        for item in found:
            own = self._vectors.get((item.namespace, item.key), {})
            scored.extend((cosine(query, v), item) for v in own.values())
            if not own:
                scoreless.append(item)
        scored.sort(key=lambda pair: pair[0], reverse=True)
        seen: set[Key] = set()
        kept: list[tuple[float | None, Item]] = []
        for score, item in scored:
            key = (item.namespace, item.key)
            if key in seen:
                continue
            ix = len(seen)
            seen.add(key)
            if ix >= op.offset + op.limit:
                break
            if ix >= op.offset:
                kept.append((score, item))
        if scoreless and len(kept) < op.limit:
            kept.extend((None, item) for item in scoreless[: op.limit - len(kept)])
        return [_hit(item, score) for score, item in kept]

    def _texts(self, puts: dict[Key, PutOp]) -> list[tuple[Key, str, str]]:
        if not self.index_config or not self.embeddings:
            return []
        fields: list[str] = list(self.index_config.get("fields") or ["$"])
        return [
            (key, path, text)
            for key, op in puts.items()
            for path, text in texts_to_embed(op, fields)
        ]

    def _store_vectors(self, texts: list[tuple[Key, str, str]], found: list[list[float]]) -> None:
        if len(found) != len(texts):
            raise ValueError(
                f"Number of embeddings ({len(found)}) does not match number of texts ({len(texts)})"
            )
        for (key, path, _), vector in zip(texts, found, strict=True):
            self._vectors.setdefault(key, {})[path] = vector

    def _apply(self, puts: dict[Key, PutOp], embedded: set[Key]) -> None:
        for (namespace, key), op in puts.items():
            if op.value is None:
                self._data[namespace].pop(key, None)
                self._vectors.pop((namespace, key), None)
                continue
            now = datetime.now(UTC)
            if (namespace, key) not in embedded:
                self._vectors.pop((namespace, key), None)
            self._data[namespace][key] = Item(
                value=dict(op.value), key=key, namespace=namespace, created_at=now, updated_at=now
            )


def _last_puts(ops: list[Op]) -> dict[Key, PutOp]:
    return {(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}


def _hit(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        item.namespace, item.key, item.value, item.created_at, item.updated_at, score=score
    )
