"""LangGraph's checkpointer read API on a store: ``list``, ``get_tuple``, ``get`` (and
``alist``, ``aget_tuple``, ``aget``) and ``delete_thread``.

A store holds a run's steps, not its channels: turning a step back into state needs the
graph that ran it. So a compiled graph registers itself with its store (``register_reader``)
under its name and version, and each read here asks the graph a run names for its
snapshots (``get_state`` / ``get_state_history``) and spells them as LangGraph's
``CheckpointTuple``. These are reads only: no method here writes a checkpoint, which only
the run loop does. ``delete_thread`` is the store's ``purge_run`` of the thread's run and of
its subgraphs' runs (``<thread>::<ns>``).

This module imports nothing above the store: a reader is anything with those two methods.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from wayline.errors import ConfigError

__all__ = ["CheckpointReading", "CheckpointTuple", "SnapshotReader"]

CHECKPOINT_FORMAT = 4
"""The ``v`` of LangGraph 1.x's checkpoints."""
_CONFIG_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id")


class CheckpointTuple(NamedTuple):
    """LangGraph's ``langgraph.checkpoint.base.CheckpointTuple``."""

    config: dict[str, Any]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    parent_config: dict[str, Any] | None = None
    pending_writes: list[tuple[str, str, Any]] | None = None


class SnapshotReader(Protocol):
    """What reads a run's state back: a compiled graph."""

    def get_state(self, config: Mapping[str, Any], *, subgraphs: bool = False) -> Any: ...

    def get_state_history(
        self,
        config: Mapping[str, Any],
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[Any]: ...


class CheckpointReading:
    """Mixed into the SQL stores (hence ``InMemorySaver``)."""

    if TYPE_CHECKING:  # the store's own

        def get_run(self, tenant_id: str, run_id: str) -> Any: ...

        def purge_run(self, tenant_id: str, run_id: str) -> int: ...

        def list_runs(
            self, tenant_id: str, *, limit: int = 100, offset: int = 0
        ) -> builtins.list[Any]: ...

        def run_ids_with_prefix(
            self, tenant_id: str, prefix: str, *, limit: int = 10
        ) -> builtins.list[str]: ...

    def register_reader(self, name: str, version: str, reader: SnapshotReader) -> None:
        """Called by ``compile``: the graph that reads back runs of ``name``/``version``."""
        readers = self._readers()  # held: one a name and version, the latest compiled
        readers[(name, version)] = reader
        readers[(name, "")] = reader

    def _readers(self) -> dict[tuple[str, str], SnapshotReader]:
        readers: dict[tuple[str, str], SnapshotReader] | None
        readers = self.__dict__.get("_checkpoint_readers")
        if readers is None:
            readers = self.__dict__["_checkpoint_readers"] = {}
        return readers

    def _reader_for(self, tenant: str, run_id: str) -> SnapshotReader | None:
        run = self.get_run(tenant, run_id)
        if run is None:
            return None
        readers = self._readers()
        for key in ((run.graph_name, run.graph_version), (run.graph_name, "")):
            reader = readers.get(key)
            if reader is not None:
                return reader
        raise ConfigError(
            f"thread {run_id!r} was run by graph {run.graph_name!r}, which is not compiled "
            "on this checkpointer in this process; compile it (graph.compile(checkpointer="
            "...)) before reading its checkpoints, or read them with graph.get_state_history"
        )

    # -- LangGraph's BaseCheckpointSaver reads ------------------------------------------

    def get_tuple(self, config: Mapping[str, Any]) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's
        latest), or None when the thread has none."""
        tenant, run_id = _thread(config)
        reader = self._reader_for(tenant, run_id)
        if reader is None:
            return None
        snapshot = reader.get_state(_lg_config(config))
        if not snapshot.metadata:
            return None
        return _as_tuple(snapshot, run_id)

    def get(self, config: Mapping[str, Any]) -> dict[str, Any] | None:
        """The checkpoint alone (``get_tuple(config).checkpoint``)."""
        found = self.get_tuple(config)
        return None if found is None else found.checkpoint

    def list(
        self,
        config: Mapping[str, Any] | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """A thread's checkpoints, newest first (``config`` None: every thread's). A config
        naming no ``checkpoint_ns`` (nor ``before``) lists every namespace of the thread, as
        LangGraph's ``InMemorySaver``: the root's checkpoints, then each subgraph's (in the
        order they started), under the root's ``thread_id`` and their ``checkpoint_ns``."""
        if config is None:
            tenant = "default"
            threads = [r.run_id for r in self.list_runs(tenant, limit=10_000)]
            threads = [t for t in threads if "::" not in t]
        else:
            tenant, run_id = _thread(config)
            threads = [run_id]
        left = limit
        for run_id in threads:
            reader = self._reader_for(tenant, run_id)
            if reader is None:
                continue
            cfg = _lg_config(config) if config is not None else _run_config(tenant, run_id)
            everywhere = config is not None and before is None and _no_namespace(config)
            configs = [cfg, *(self._namespaces(tenant, run_id) if everywhere else [])]
            for named in configs:
                for snapshot in reader.get_state_history(named, filter=filter, before=before):
                    if left is not None and left <= 0:
                        return
                    yield _as_tuple(snapshot, run_id)
                    if left is not None:
                        left -= 1

    def _namespaces(self, tenant: str, thread: str) -> builtins.list[dict[str, Any]]:
        """A config naming each subgraph run of ``thread`` (``<thread>::<ns>``) by the
        root's thread and the subgraph's ``checkpoint_ns``, in the order they started (a
        subgraph's fork, ``<ns>@<step>``, is a thread's branch, not a namespace of it)."""
        prefix = f"{thread}::"
        ids = self.run_ids_with_prefix(tenant, prefix, limit=10_000)
        runs = [self.get_run(tenant, r) for r in ids if "@" not in r[len(prefix) :]]
        found = sorted((r for r in runs if r is not None), key=lambda r: r.created_at)
        conf = {"thread_id": thread, "tenant": tenant}
        return [
            {"configurable": {**conf, "checkpoint_ns": "|".join(r.run_id.split("::")[1:])}}
            for r in found
        ]

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint of the thread: its run's rows and its subgraphs' runs'."""
        tenant = "default"
        prefix = f"{thread_id}::"
        children = [
            r.run_id
            for r in self.list_runs(tenant, limit=10_000)
            if str(r.run_id).startswith(prefix)
        ]
        for run_id in (*children, str(thread_id)):
            self.purge_run(tenant, run_id)

    async def aget_tuple(self, config: Mapping[str, Any]) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def aget(self, config: Mapping[str, Any]) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.get, config)

    async def alist(
        self,
        config: Mapping[str, Any] | None,
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: [*self.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in found:
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)


def _thread(config: Mapping[str, Any]) -> tuple[str, str]:
    conf = config.get("configurable") if isinstance(config, Mapping) else None
    thread = (conf or {}).get("thread_id")
    if thread is None or thread == "":
        raise ConfigError(
            "a checkpointer read needs {'configurable': {'thread_id': ...}} naming the thread "
            f"(got {config!r})"
        )
    return str((conf or {}).get("tenant", "default")), str(thread)


def _no_namespace(config: Mapping[str, Any]) -> bool:
    """Whether a config names no ``checkpoint_ns`` (LangGraph's ``list`` then reads every
    namespace; ``""`` names the root's)."""
    return (config.get("configurable") or {}).get("checkpoint_ns") is None


def _lg_config(config: Mapping[str, Any]) -> dict[str, Any]:
    conf = dict(config.get("configurable") or {})
    if not conf.get("checkpoint_ns"):
        conf.pop("checkpoint_ns", None)
    return {"configurable": conf}


def _run_config(tenant: str, run_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": run_id, "tenant": tenant}}


def _cfg(config: Mapping[str, Any] | None, thread: str) -> dict[str, Any] | None:
    if config is None:
        return None
    conf = config.get("configurable") or {}
    out = {k: conf[k] for k in _CONFIG_KEYS if k in conf}
    out["thread_id"] = thread
    out.setdefault("checkpoint_ns", "")
    return {"configurable": out}


_ROOT = "__root__"
"""The one channel of a single-value state (``wayline.graph.schema.ROOT``, a layer above)."""


def _as_tuple(snapshot: Any, thread: str) -> CheckpointTuple:
    """A wayline ``StateSnapshot`` spelled as LangGraph's ``CheckpointTuple``."""
    config = _cfg(snapshot.config, thread) or {"configurable": {"thread_id": thread}}
    meta = snapshot.metadata or {}
    single = not isinstance(snapshot.values, Mapping)  # a single-value state's channel
    values = {_ROOT: snapshot.values} if single else snapshot.values
    checkpoint = {
        "v": CHECKPOINT_FORMAT,
        "id": config["configurable"].get("checkpoint_id"),
        "ts": snapshot.created_at,
        "channel_values": dict(values),
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }
    metadata: dict[str, Any] = {
        "source": meta.get("source"),
        "step": meta.get("step"),
        "parents": {},
    }
    writes: list[tuple[str, str, Any]] = []
    for task in snapshot.tasks:
        if single and task.result is not None:
            writes.append((task.id, _ROOT, task.result))
        for key, value in ({} if single else task.result or {}).items():
            writes.append((task.id, key, value))
        if task.interrupts:
            writes.append((task.id, "__interrupt__", list(task.interrupts)))
        if task.error:  # as LangGraph's ERROR write: what the failed task raised
            writes.append((task.id, "__error__", task.error))
    return CheckpointTuple(
        config, checkpoint, metadata, _cfg(snapshot.parent_config, thread), writes
    )
