"""The store as a node of a run sees it: writes that commit with the node's step.

A ``DurableStore`` on the run's own database is not written by the node directly. The
node's puts and deletes are held in its task's view and go into the commit of its step (or
of its finished-peer record when a peer fails), fenced by the run's lease in the same
transaction: a worker killed mid-node leaves nothing, a replayed node never wrote the
first time, a zombie's commit is refused whole. Reads see the store as committed plus
this run's writes not yet durable (async and exit durability) plus the node's own.

Any other store (``InMemoryStore``, LangGraph's, a ``DurableStore`` on another database)
is handed to the node as it is, and its writes are immediate, as in LangGraph.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from wayline.memory.base import BaseStore, Op, Result
from wayline.memory.durable import DurableStore, Key, _checked, _queries
from wayline.store.memory_records import MemoryWrite

__all__ = ["RunMemory", "StepStore"]


class StepStore(BaseStore):
    """One task's view of a ``DurableStore`` (one attempt: a retry starts a fresh one)."""

    def __init__(self, durable: DurableStore, run: RunMemory, node: str, step: int) -> None:
        self.durable = durable
        self.run = run
        self.node = node
        self.step = step
        self.ttl_config = durable.ttl_config
        self.writes: dict[Key, MemoryWrite] = {}

    supports_ttl = True

    def _overlay(self) -> dict[Key, MemoryWrite]:
        return {**self.run.overlay, **self.writes} if self.run.overlay else dict(self.writes)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        emb = self.durable.embeddings
        vectors = {q: emb.embed_query(q) for q in _queries(ops)} if emb else {}
        overlay = self._overlay()
        results = [self.durable.read_one(op, vectors, overlay) for op in ops]
        self._hold(self.durable.writes_for(ops))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        emb = self.durable.embeddings
        vectors: dict[str, list[float]] = {}
        if emb:
            queries = _queries(ops)
            found = await asyncio.gather(*(emb.aembed_query(q) for q in queries))
            vectors = dict(zip(queries, found, strict=True))
        overlay = self._overlay()
        results = await asyncio.to_thread(
            lambda: [self.durable.read_one(op, vectors, overlay) for op in ops]
        )
        self._hold(await self.durable.awrites_for(ops))
        return results

    def _hold(self, writes: list[MemoryWrite]) -> None:
        for w in writes:
            w = _provenance(w, self.node, self.step, self.run.subject)
            self.writes[(w.namespace, w.key)] = w


def _provenance(w: MemoryWrite, node: str, step: int, subject: str | None) -> MemoryWrite:
    import dataclasses

    return dataclasses.replace(w, node=node, step=step, subject=w.subject or subject)


class RunMemory:
    """What one invocation of a run keeps of long-term memory: each task's view, and the
    writes it submitted that may not be durable yet (read back by its later steps)."""

    def __init__(
        self, store: BaseStore | None, backend: Any, tenant: str, *, durability: str = "sync"
    ) -> None:
        self.store = store
        self.durable = (
            store.bound(backend, tenant)
            if isinstance(store, DurableStore) and store.colocated(backend)
            else None
        )
        self.views: dict[str, StepStore] = {}
        self.overlay: dict[Key, MemoryWrite] = {}
        self.keep = durability != "sync"
        """Whether submitted writes may not be durable yet when the next step reads."""
        self.subject: str | None = None
        """The run's data subject: a node's item is about it unless the put says otherwise."""

    def view(self, task_id: str, node: str, step: int) -> BaseStore | None:
        """What the task's ``store`` parameter, ``get_store()`` and ``runtime.store`` are."""
        if self.durable is None:
            return self.store
        found = self.views.get(task_id)
        if found is None:
            found = self.views[task_id] = StepStore(self.durable, self, node, step)
        return found

    def take(self, task_id: str) -> list[MemoryWrite]:
        """The finished task's writes, for the commit that records it."""
        found = self.views.pop(task_id, None)
        if found is None or not found.writes:
            return []
        writes = list(found.writes.values())
        if self.keep:
            self.overlay.update(found.writes)
        return writes

    def discard(self, task_id: str) -> None:
        """A failed attempt's writes are dropped: a retry starts over."""
        self.views.pop(task_id, None)
