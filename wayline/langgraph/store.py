"""LangGraph's long-term store (``langgraph.store.base.BaseStore``) on wayline's memory:
``WaylineStore`` is a LangGraph ``BaseStore`` whose items are ``DurableStore``'s, on the
runs' database (SQLite or PostgreSQL), tenant first in every key, metered, purged and erased
with the tenant, with TTL and semantic search (``index``).

A LangGraph graph a worker runs (``wayline.langgraph.engine``) gets one bound to the run
(``for_run``): a node's ``store: BaseStore`` parameter, ``get_store()`` and
``runtime.store`` read and write the run's tenant's items, the ones the server's ``/store``
routes (``langgraph-sdk``'s ``client.store``) show. As in LangGraph a node's put is visible
at once (LangGraph's stores write through); wayline adds the fence: each write commits only
while the worker holds the run's lease (``LeaseLost`` otherwise), in one transaction with
the item's provenance (run, node, step).

``index`` is LangGraph's ``{"dims", "embed", "fields"}``; ``embed`` an ``Embeddings``, a
function, or as ``langgraph.json`` names it: ``"./file.py:fn"``, ``"module:fn"``, or a
provider string such as ``"openai:text-embedding-3-small"`` (LangChain's
``init_embeddings``, when ``langchain`` is installed).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from langgraph.store import base as lg

from wayline.errors import ConfigError
from wayline.memory import base as wl
from wayline.memory.durable import DurableStore, _checked, _queries
from wayline.store.base import Store
from wayline.store.memory_records import MemoryWrite
from wayline.store.records import CommitBatch

__all__ = ["WaylineStore", "resolve_embed"]


class WaylineStore(lg.BaseStore):
    """LangGraph's ``BaseStore`` over ``DurableStore``. ``store``: a URL or an open
    ``Store``; ``tenant``: whose items a caller outside a run reads and writes; ``index``
    and ``ttl`` as LangGraph's (``IndexConfig``, ``TTLConfig``; expired items are never
    returned, workers sweep them)."""

    supports_ttl = True

    def __init__(
        self,
        store: Any = None,
        *,
        tenant: str = "default",
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        given = dict(index) if index else None
        if given is not None and isinstance(given.get("embed"), str):
            given["embed"] = resolve_embed(given["embed"])
        self.durable = DurableStore(
            store,
            tenant=tenant,
            index=given,  # type: ignore[arg-type]
            ttl=dict(ttl) if ttl else None,  # type: ignore[arg-type]
        )
        self.ttl_config = self.durable.ttl_config
        self._run: tuple[str, int] | None = None
        """(run id, fencing token) of the run whose node writes: every write fenced."""

    # -- identity ---------------------------------------------------------------------

    @classmethod
    def over(cls, durable: DurableStore) -> WaylineStore:
        """The LangGraph face of a ``DurableStore`` (its backend, tenant, index, TTL)."""
        out = cls.__new__(cls)
        out.durable = durable
        out.ttl_config = durable.ttl_config
        out._run = None
        return out

    def bound(self, backend: Store, tenant: str) -> WaylineStore:
        """The same store (index, TTL) on ``backend`` for ``tenant``."""
        return self.over(self.durable.bound(backend, tenant))

    def for_run(self, backend: Store, tenant: str, run_id: str, token: int) -> WaylineStore:
        """What the nodes of one claimed run see: the run's tenant, writes under its fence."""
        out = self.bound(backend, tenant)
        out._run = (run_id, token)
        return out

    @property
    def tenant(self) -> str:
        return self.durable.tenant

    # -- BaseStore --------------------------------------------------------------------

    def batch(self, ops: Iterable[lg.Op]) -> list[lg.Result]:
        mine = _checked([_op(op) for op in ops])
        emb = self.durable.embeddings
        vectors = {q: emb.embed_query(q) for q in _queries(mine)} if emb else {}
        results = self.durable.read(mine, vectors)
        self._write(self.durable.writes_for(mine))
        return [_result(r) for r in results]

    async def abatch(self, ops: Iterable[lg.Op]) -> list[lg.Result]:
        mine = _checked([_op(op) for op in ops])
        emb = self.durable.embeddings
        vectors: dict[str, list[float]] = {}
        if emb:
            queries = _queries(mine)
            found = await asyncio.gather(*(emb.aembed_query(q) for q in queries))
            vectors = dict(zip(queries, found, strict=True))
        results = await asyncio.to_thread(self.durable.read, mine, vectors)
        writes = await self.durable.awrites_for(mine)
        await asyncio.to_thread(self._write, writes)
        return [_result(r) for r in results]

    def _write(self, writes: list[MemoryWrite]) -> None:
        if not writes:
            return
        db = self.durable._db()
        if self._run is None:
            db.memory_put(self.durable.tenant, writes)
            return
        run_id, token = self._run
        node, step = _where()
        if node is not None:
            writes = [_labelled(w, node, step) for w in writes]
        db.commit(self.durable.tenant, run_id, token, CommitBatch(memory=writes))


def _where() -> tuple[str | None, int | None]:
    """The LangGraph node (and step) calling the store, when called from inside one."""
    try:
        from langgraph.config import get_config

        meta = get_config().get("metadata") or {}
    except (RuntimeError, ImportError):  # outside a runnable's context
        return None, None
    node, step = meta.get("langgraph_node"), meta.get("langgraph_step")
    return (str(node) if node else None), (int(step) if isinstance(step, int) else None)


def _labelled(w: MemoryWrite, node: str, step: int | None) -> MemoryWrite:
    import dataclasses

    return dataclasses.replace(w, node=w.node or node, step=w.step if w.step is not None else step)


def _op(op: Any) -> wl.Op:
    """A LangGraph operation as wayline's (the same fields, in the same order)."""
    if isinstance(op, lg.GetOp | wl.GetOp):
        return wl.GetOp(tuple(op.namespace), op.key, op.refresh_ttl)
    if isinstance(op, lg.SearchOp | wl.SearchOp):
        return wl.SearchOp(
            tuple(op.namespace_prefix), op.filter, op.limit, op.offset, op.query, op.refresh_ttl
        )
    if isinstance(op, lg.PutOp | wl.PutOp):
        return wl.PutOp(tuple(op.namespace), op.key, op.value, op.index, op.ttl)
    if isinstance(op, lg.ListNamespacesOp | wl.ListNamespacesOp):
        conditions = tuple(
            wl.MatchCondition(c.match_type, tuple(c.path)) for c in op.match_conditions or ()
        )
        return wl.ListNamespacesOp(conditions or None, op.max_depth, op.limit, op.offset)
    raise ValueError(f"Unknown operation type: {type(op).__name__}")


def _result(found: Any) -> lg.Result:
    """A wayline result as LangGraph's: its ``Item``/``SearchItem`` classes."""
    if isinstance(found, wl.SearchItem):
        return _search_item(found)
    if isinstance(found, wl.Item):
        return lg.Item(
            value=found.value,
            key=found.key,
            namespace=found.namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )
    if isinstance(found, list):
        return [_search_item(i) if isinstance(i, wl.SearchItem) else i for i in found]
    return found  # type: ignore[no-any-return]


def _search_item(found: wl.SearchItem) -> lg.SearchItem:
    return lg.SearchItem(
        found.namespace, found.key, found.value, found.created_at, found.updated_at, found.score
    )


def resolve_embed(spec: str, base: Path | None = None) -> Any:
    """The embeddings ``langgraph.json``'s ``store.index.embed`` names: ``"path/file.py:fn"``
    (relative to ``base``, the file's folder), ``"module:attr"``, or a provider string for
    LangChain's ``init_embeddings`` (``"openai:text-embedding-3-small"``)."""
    target, sep, attr = spec.rpartition(":")
    if sep and target.endswith(".py"):
        path = Path(target) if base is None else (base / target).resolve()
        if not path.is_file():
            raise ConfigError(f"store.index.embed {spec!r}: no file {path}")
        name = f"wayline_embed_{abs(hash(str(path)))}"
        modspec = importlib.util.spec_from_file_location(name, path)
        if modspec is None or modspec.loader is None:
            raise ConfigError(f"store.index.embed {spec!r}: cannot load {path}")
        module = importlib.util.module_from_spec(modspec)
        sys.modules[name] = module
        modspec.loader.exec_module(module)
        return _attr(module, attr, spec)
    if sep and target:
        try:
            found: Any = importlib.import_module(target)
        except ImportError:
            found = None
        if found is not None and hasattr(found, attr):
            return _attr(found, attr, spec)
    try:
        from langchain.embeddings import init_embeddings  # type: ignore[import-not-found]
    except ImportError:
        raise ConfigError(
            f"store.index.embed {spec!r} names no importable function (module:attr or "
            "./file.py:attr) and langchain is not installed to load it as a provider model: "
            "pip install langchain and the provider's package, or name a function"
        ) from None
    return init_embeddings(spec)


def _attr(module: Any, attr: str, spec: str) -> Any:
    found = getattr(module, attr, None)
    if found is None or not (callable(found) or hasattr(found, "embed_documents")):
        raise ConfigError(
            f"store.index.embed {spec!r}: {attr!r} is not an Embeddings or a function from "
            "texts to vectors"
        )
    return found
