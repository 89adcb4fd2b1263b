"""``WaylineSaver``: a LangGraph checkpointer on wayline's store.

A LangGraph thread is a wayline run (run id = thread id) of the tenant named by
``config["configurable"]["tenant"]`` (default: the saver's ``tenant``), so everything the
store gives a run applies: tenant in every key, the byte meter (``wayline runs bytes
THREAD``), purge and export, encryption at rest (``from_url(url, keys=...)``), and the
effect ledger (``wayline.langgraph.effect``).

What it stores per ``put``: the checkpoint without its channel values, and each channel
version in ``new_versions`` once (``ValueCodec``: a list that grew by appending is stored as
its new items); a version of at most ``inline_bytes`` stored (a counter, LangGraph's routing
channels) rides in the checkpoint row instead (``inline``). A task's writes and the step's
checkpoint commit in one transaction (``batching``: ``put_writes`` waits up to
``writes_linger`` seconds for the ``put``). Reading a checkpoint rebuilds every channel
from its row's inline values and its versions' rows. The async methods
run the sync ones in a worker thread: one implementation, two entry points.

Serialization: LangGraph's ``JsonPlusSerializer`` with ``pickle_fallback=False`` and its
strict msgpack allowlist (``allowed_modules`` adds user types): reading never unpickles.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from wayline.errors import WaylineError
from wayline.ids import unique_hex
from wayline.langgraph.batching import StepBatcher
from wayline.langgraph.fence import QUEUED_KEY, fence_of
from wayline.langgraph.inline import INLINE_KEY, InlineValues
from wayline.langgraph.values import (
    EMPTY,
    Head,
    LoadWrites,
    ParentWrites,
    ValueCodec,
    channel_label,
    pack,
    seg_count,
    unpack,
)
from wayline.metrics import observe_read
from wayline.store.base import Store
from wayline.store.lg_records import (
    LgCheckpoint,
    LgOp,
    LgPut,
    LgPutWrites,
    LgThreadRows,
    LgValue,
    LgWrite,
)

__all__ = ["WaylineSaver"]

DEFAULT_TENANT = "default"
_MAX_PENDING = 1024
"""Checkpoints whose durable writes are remembered (to store values by reference)."""

PendingKey = tuple[str, str, str, str]
"""(tenant, thread, namespace, checkpoint id)"""


class WaylineSaver(BaseCheckpointSaver[str]):
    """LangGraph's ``BaseCheckpointSaver`` on any wayline store.

    ``WaylineSaver.from_url("sqlite:///runs.db")`` or ``"postgresql://..."``, or
    ``WaylineSaver(store)`` over an open store (``wayline.connect(...)``).
    """

    def __init__(
        self,
        store: Store,
        *,
        tenant: str = DEFAULT_TENANT,
        allowed_modules: Sequence[tuple[str, ...]] | None = None,
        full_copy_ratio: float = 2.0,
        min_full_copy_bytes: int = 16_384,
        chain_skip: int = 64,
        writes_linger: float = 0.002,
        inline_bytes: int = 32,
    ) -> None:
        serde = JsonPlusSerializer(
            pickle_fallback=False,
            allowed_json_modules=None,
            allowed_msgpack_modules=list(allowed_modules) if allowed_modules else None,
        )
        super().__init__(serde=serde)
        self.store = store
        self.tenant = tenant
        self.values = ValueCodec(
            self.serde.dumps_typed,
            self._loads,
            ratio=full_copy_ratio,
            min_full=min_full_copy_bytes,
            skip=chain_skip,
        )
        self.inline = InlineValues(inline_bytes)
        self._steps: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._pending: OrderedDict[PendingKey, dict[tuple[str, str, int], Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._owns_store = False
        self._batcher = StepBatcher(self._commit, linger=writes_linger)

    @classmethod
    def from_url(cls, url: str, *, keys: Any = None, **kw: Any) -> WaylineSaver:
        """Open a store by URL (``keys``: a ``KeyProvider`` seals every payload)."""
        from wayline.store import open_store

        saver = cls(open_store(url, keys=keys), **kw)
        saver._owns_store = True
        return saver

    def _commit(self, tenant: str, thread: str, ops: Sequence[LgOp]) -> None:
        self.store.lg_write_batch(tenant, thread, ops)

    def close(self) -> None:
        """Close the store if this saver opened it (``from_url``)."""
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> WaylineSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        """A zero-padded counter and 8 random hex digits: increasing, and unique per fork.

        Why not LangGraph's default int: values are stored once per (channel, version), and
        a fork (a write to an old checkpoint) would give its new value the same int as the
        original branch's, which then reads the wrong one. LangGraph's own SQL savers add
        16 random digits for the same reason; 8 hex digits keep a checkpoint ~30 bytes
        smaller (``unique_hex``: no system call per version on LangGraph's loop thread)."""
        if current is None:
            n = 0
        elif isinstance(current, str):
            n = int(current.split(".", 1)[0])
        else:
            n = int(current)
        return f"{n + 1:010d}.{unique_hex(8)}"

    # -- identity -------------------------------------------------------------------------

    def _where(self, config: RunnableConfig) -> tuple[str, str, str]:
        conf = config.get("configurable") or {}
        thread = conf.get("thread_id")
        if thread is None:
            raise WaylineError(
                "a LangGraph checkpointer needs a thread: pass "
                '{"configurable": {"thread_id": "..."}} in the config'
            )
        return str(conf.get("tenant", self.tenant)), str(thread), str(conf.get("checkpoint_ns", ""))

    def _config(self, tenant: str, thread: str, ns: str, checkpoint_id: str) -> RunnableConfig:
        conf: dict[str, Any] = {
            "thread_id": thread,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
        if tenant != self.tenant:
            conf["tenant"] = tenant
        return {"configurable": conf}

    def _loads(self, typed: tuple[str, bytes]) -> Any:
        return self.serde.loads_typed(typed)

    # -- writes ---------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        tenant, thread, ns = self._where(config)
        parent = get_checkpoint_id(config)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        step = int(meta.get("step", 0) or 0)
        fence = fence_of(config)
        if fence is not None and fence.queued is not None and ns == "":
            meta = cast(CheckpointMetadata, {**meta, QUEUED_KEY: fence.queued})
        body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        values: list[LgValue] = []
        heads: list[tuple[tuple[str, str, str, str], Head]] = []
        refs: list[LgWrite] = []
        inline: dict[str, bytes] = {}
        forms: list[tuple[tuple[str, str, str, str], str, bytes | None]] = []
        channel_values = checkpoint["channel_values"]
        parent_writes = self._parent_writes((tenant, thread, ns, parent or ""))
        for channel, version in new_versions.items():
            key = (tenant, thread, ns, channel)
            present = channel in channel_values
            value = channel_values.get(channel)
            writes = parent_writes.get(channel)
            v, head = self.values.encode(key, str(version), value, present, writes)
            if v.base is None and self.inline.fits(v.payload):
                inline[channel] = v.payload  # no row, and no head: nothing builds on it
                forms.append((key, str(version), v.payload))
                continue
            values.append(dataclasses.replace(v, step=step, label=channel_label(channel)))
            heads.append((key, head))
            forms.append((key, str(version), None))
            if v.writes_of is not None and writes is not None:
                refs.extend(writes.rows)
        for channel, version in checkpoint["channel_versions"].items():
            if channel not in new_versions:  # unchanged: inline here too if it is inline
                form = self._form((tenant, thread, ns, channel), str(version), channel_values)
                if form is not None:
                    inline[channel] = form
        stored: dict[str, Any] = {"checkpoint": body, "metadata": meta}
        if inline:
            stored[INLINE_KEY] = inline
        payload = pack(*self.serde.dumps_typed(stored))
        lg_run = meta.get("run_id")
        row = LgCheckpoint(
            ns, checkpoint["id"], parent, None if lg_run is None else str(lg_run), step, payload
        )
        fenced = None if fence is None else fence.write(step if ns == "" else None)
        self._batcher.submit((tenant, thread), LgPut(row, values, refs, fenced), linger=False)
        for key, head in heads:  # only once durable: a later suffix may build on them
            self.values.remember(key, head)
        for key, version, form in forms:
            self.inline.note(key, version, form)
        self._note_step((tenant, thread, ns), step)
        return self._config(tenant, thread, ns, checkpoint["id"])

    def _form(
        self, key: tuple[str, str, str, str], version: str, channel_values: dict[str, Any]
    ) -> bytes | None:
        """The inline payload of an unchanged channel's version, or None when it has a row:
        as this saver wrote or read it, else from the checkpoint's value of it (``inline``)."""
        known, form = self.inline.known(key, version)
        if known:
            return form
        channel = key[3]
        if channel in channel_values:
            payload = pack(*self.serde.dumps_typed(channel_values[channel]))
        else:
            payload = pack(EMPTY, b"")
        form = payload if self.inline.fits(payload) else None
        self.inline.note(key, version, form)
        return form

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._put_writes(config, writes, task_id, task_path, linger=True)

    def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        *,
        linger: bool,
    ) -> None:
        tenant, thread, ns = self._where(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            raise WaylineError("put_writes needs the checkpoint_id the writes belong to")
        step = self._steps.get((tenant, thread, ns), 0)
        rows = [
            LgWrite(
                ns,
                checkpoint_id,
                task_id,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                task_path,
                pack(*self.serde.dumps_typed(value)),
                step,
                channel_label(channel),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        if not replace:  # the next checkpoint (maybe being put right now) may refer to them
            self._note_writes((tenant, thread, ns, checkpoint_id), rows, writes)
        fence = fence_of(config)
        fenced = None if fence is None else fence.write(None)
        if rows:  # regular writes wait briefly for the step's checkpoint (``batching``)
            op = LgPutWrites(rows, replace, fenced)
            self._batcher.submit((tenant, thread), op, linger=linger and not replace)

    def _note_step(self, where: tuple[str, str, str], step: int) -> None:
        """The step the writes against a namespace's newest checkpoint belong to (meter)."""
        with self._lock:
            self._steps[where] = step
            self._steps.move_to_end(where)
            while len(self._steps) > _MAX_PENDING:
                self._steps.popitem(last=False)

    def _note_writes(
        self, where: PendingKey, rows: list[LgWrite], writes: Sequence[tuple[str, Any]]
    ) -> None:
        with self._lock:
            noted = self._pending.setdefault(where, {})
            self._pending.move_to_end(where)
            for row, (channel, value) in zip(rows, writes, strict=True):
                if channel not in WRITES_IDX_MAP:  # the store keeps a task's first write
                    count = len(value) if type(value) is list else None
                    noted.setdefault((row.task_path, row.task_id, row.idx), (row, count))
            while len(self._pending) > _MAX_PENDING:
                self._pending.popitem(last=False)

    def _parent_writes(self, where: PendingKey) -> dict[str, ParentWrites]:
        """Per channel, the parent checkpoint's writes in LangGraph's order
        (``writes_sort_key``), when every one of them was a list."""
        with self._lock:
            noted = self._pending.pop(where, None)
        if not noted:
            return {}
        by_channel: dict[str, list[tuple[LgWrite, int | None]]] = defaultdict(list)
        for sort_key in sorted(noted):
            row, count = noted[sort_key]
            by_channel[row.channel].append((row, count))
        out = {}
        for channel, found in by_channel.items():
            counts = [n for _, n in found]
            if all(n is not None for n in counts):
                rows = tuple(row for row, _ in found)
                out[channel] = ParentWrites(where[3], tuple(n or 0 for n in counts), rows)
        return out

    def delete_thread(self, thread_id: str) -> None:
        """Erase the thread: every row the store holds for it (as ``wayline purge``)."""
        self.store.purge_run(self.tenant, str(thread_id))
        self.values.forget(self.tenant, str(thread_id))
        self.inline.forget(self.tenant, str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints and writes LangGraph runs made (the saver's tenant).
        Values that later checkpoints store by reference to those writes get their items
        in their own row first (each step of that keeps the value the same)."""
        ids = [str(r) for r in run_ids]
        doomed: dict[tuple[str, str], list[str]] = defaultdict(list)
        for thread, ns, checkpoint_id in self.store.lg_checkpoints_of_runs(self.tenant, ids):
            doomed[(thread, ns)].append(checkpoint_id)
        for (thread, ns), checkpoint_ids in doomed.items():
            for v in self.store.lg_values_over_writes(self.tenant, thread, ns, checkpoint_ids):
                load = self._writes_loader(self.tenant, thread, ns, v.channel, [v.writes_of])
                items, _ = self.values.suffix(v, load)
                inline = dataclasses.replace(
                    v, writes_of=None, payload=pack(*self.serde.dumps_typed(items))
                )
                self.store.lg_inline_value(self.tenant, thread, inline)
        self.store.lg_delete_runs(self.tenant, ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and write of a thread (all namespaces) to another,
        replacing what the target held."""
        rows = self.store.lg_thread_rows(self.tenant, str(source_thread_id))
        if rows.checkpoints:
            self.store.lg_replace_thread(self.tenant, str(target_thread_id), rows)
            self.values.forget(self.tenant, str(target_thread_id))
            self.inline.forget(self.tenant, str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint, its writes, and its
        values rewritten as full copies (so nothing it needs is pruned away); ``delete``:
        drop every checkpoint of the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise WaylineError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
        for thread in map(str, thread_ids):
            self.values.forget(self.tenant, thread)
            self.inline.forget(self.tenant, thread)
            rows = self.store.lg_thread_rows(self.tenant, thread)
            if not rows.checkpoints:
                continue
            kept = LgThreadRows([], [], [])
            if strategy == "keep_latest":
                kept = self._latest_only(rows)
            self.store.lg_replace_thread(self.tenant, thread, kept)

    def _latest_only(self, rows: LgThreadRows) -> LgThreadRows:
        latest: dict[str, LgCheckpoint] = {}
        for c in rows.checkpoints:
            if (
                c.checkpoint_ns not in latest
                or c.checkpoint_id > latest[c.checkpoint_ns].checkpoint_id
            ):
                latest[c.checkpoint_ns] = c
        by_key = {(v.checkpoint_ns, v.channel, v.version): v for v in rows.values}
        values = []
        for ns, c in latest.items():
            body = self._decode_checkpoint(c)["checkpoint"]
            chains = {(v.channel, v.version): v for v in rows.values if v.checkpoint_ns == ns}
            for channel, version in body["channel_versions"].items():
                row = by_key.get((ns, channel, str(version)))
                if row is None:
                    continue
                if row.base is None:
                    values.append(row)
                    continue
                chain = {ver: v for (ch, ver), v in chains.items() if ch == channel}
                value, _ = self.values.decode_chain(row, chain, self._rows_loader(rows.writes))
                payload = pack(*self.serde.dumps_typed(value))
                values.append(LgValue(ns, channel, row.version, None, row.version, None, payload))
        keep = {(c.checkpoint_ns, c.checkpoint_id) for c in latest.values()}
        writes = [w for w in rows.writes if (w.checkpoint_ns, w.checkpoint_id) in keep]
        return LgThreadRows(list(latest.values()), values, writes)

    # -- reads ----------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """A checkpoint and its pending writes. A worker's first read of a claimed run is
        timed as wayline's own engine times it (``wayline.reconstruct.duration``, and the
        deltas of the value chains it folded as ``wayline.replay.depth``)."""
        fence = fence_of(config)
        timed = fence is not None and fence.first_read()
        started = time.perf_counter()
        tenant, thread, ns = self._where(config)
        row = self.store.lg_get_checkpoint(tenant, thread, ns, get_checkpoint_id(config))
        if row is None:
            return None  # a new run's start: nothing read, nothing to time
        folds = [0]
        found = self._tuple(tenant, thread, row, remember=True, folds=folds)
        if timed and fence is not None:
            observe_read(fence.graph, tenant, started, folds[0], recovery=fence.recovery)
        return found

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Newest first; ``config`` narrows to a thread, a namespace and a checkpoint id
        (as LangGraph's savers do); ``filter`` matches metadata keys (decoded here, since
        metadata is sealed with the rest of the checkpoint when the store is encrypted)."""
        conf = (config or {}).get("configurable") or {}
        tenant = str(conf.get("tenant", self.tenant))
        thread = conf.get("thread_id")
        ns = conf.get("checkpoint_ns")
        only = conf.get("checkpoint_id")
        rows = self.store.lg_list_checkpoints(
            tenant,
            thread_id=None if thread is None else str(thread),
            checkpoint_ns=None if ns is None else str(ns),
            before_id=get_checkpoint_id(before) if before else None,
            limit=None if filter or only else limit,
        )
        given = 0
        for row_thread, row in rows:
            if limit is not None and given >= limit:
                return
            if only is not None and row.checkpoint_id != only:
                continue
            if filter:
                meta = self._decode_checkpoint(row)["metadata"]
                if any(meta.get(k) != v for k, v in filter.items()):
                    continue
            given += 1
            yield self._tuple(tenant, row_thread, row, remember=False)

    def _decode_checkpoint(self, row: LgCheckpoint) -> dict[str, Any]:
        decoded: dict[str, Any] = self._loads(unpack(row.payload))
        return decoded

    def _tuple(
        self,
        tenant: str,
        thread: str,
        row: LgCheckpoint,
        *,
        remember: bool,
        folds: builtins.list[int] | None = None,
    ) -> CheckpointTuple:
        ns = row.checkpoint_ns
        decoded = self._decode_checkpoint(row)
        body, meta = decoded["checkpoint"], decoded["metadata"]
        inline: dict[str, bytes] = decoded.get(INLINE_KEY) or {}
        channel_values = {}
        for channel, version in body["channel_versions"].items():
            small = inline.get(channel)
            if small is not None:
                if remember:
                    self.inline.note((tenant, thread, ns, channel), str(version), small)
                type_, data = unpack(small)
                if type_ != EMPTY:
                    channel_values[channel] = self._loads((type_, data))
                continue
            found = self._value(tenant, thread, ns, channel, str(version), remember, folds)
            if remember:
                self.inline.note((tenant, thread, ns, channel), str(version), None)
            if found is not None:
                channel_values[channel] = found[0]
        checkpoint: Checkpoint = {**body, "channel_values": channel_values}  # type: ignore[typeddict-item]
        writes = self.store.lg_load_writes(tenant, thread, ns, row.checkpoint_id)
        pending = [(w.task_id, w.channel, self._loads(unpack(w.payload))) for w in writes]
        if remember:
            self._note_step((tenant, thread, ns), row.step)
            regular = [(w, (w.channel, v)) for w, (_, _, v) in zip(writes, pending, strict=True)]
            # (their values as read back: the bytes decide whether a value refers to them)
            self._note_writes(
                (tenant, thread, ns, row.checkpoint_id),
                [w for w, _ in regular],
                [cv for _, cv in regular],
            )
        return CheckpointTuple(
            config=self._config(tenant, thread, ns, row.checkpoint_id),
            checkpoint=checkpoint,
            metadata=meta,
            parent_config=(
                self._config(tenant, thread, ns, row.parent_id) if row.parent_id else None
            ),
            pending_writes=pending,
        )

    def _value(
        self,
        tenant: str,
        thread: str,
        ns: str,
        channel: str,
        version: str,
        remember: bool,
        folds: builtins.list[int] | None = None,
    ) -> tuple[Any] | None:
        """(value,) of a channel version, or None when the channel had no value; ``folds``
        counts the deltas of the chain read to build it. The version comes with the
        newest rows of its chain below it (its one-version deltas: ``skip`` at most), in
        one read."""
        run = self.store.lg_load_value_run(
            tenant, thread, ns, channel, version, self.values.skip + 1
        )
        if not run or run[0].version != version:
            return None
        row = run[0]
        key = (tenant, thread, ns, channel)
        if row.base is None:
            present, value = self.values.decode_full(row)
            if not present:
                return None
            if remember:
                items = len(value) if type(value) is list else 0
                head = Head(version, value, version, len(row.payload), 0, root_items=items)
                self.values.remember(key, head)
            return (value,)
        path = self._path(tenant, thread, ns, row, run[1:])
        if folds is not None:
            folds[0] += len(path) - 1
        refs = sorted({v.writes_of for v in path if v.writes_of is not None})
        load = self._writes_loader(tenant, thread, ns, channel, refs)
        value, head = self.values.decode_chain(row, {v.version: v for v in path}, load)
        if remember:
            self.values.remember(key, head)
        return (value,)

    def _path(
        self, tenant: str, thread: str, ns: str, row: LgValue, below: Iterable[LgValue] = ()
    ) -> builtins.list[LgValue]:
        """The rows from a version down its bases to its full copy: skip rows keep it at
        most ``(skip - 1)`` rows per level (``ValueCodec``), read a level or more at a
        time (``below``: rows read with the version; then ``_below``); a base those reads
        missed is read alone."""
        path = [row]
        read: dict[str, LgValue] = {v.version: v for v in below}
        while row.base is not None:
            base = read.get(row.base)
            if base is None:
                read = {v.version: v for v in self._below(tenant, thread, ns, row)}
                base = read.get(row.base)
            if base is None:
                base = self.store.lg_load_value(tenant, thread, ns, row.channel, row.base)
                if base is None:
                    break  # decode_chain names the missing version
            path.append(base)
            row = base
        return path

    def _below(self, tenant: str, thread: str, ns: str, row: LgValue) -> builtins.list[LgValue]:
        """Rows of ``row``'s path below it, in one read. A skip row carries its count,
        which fixes the count of every row below it on the path, and so its version's
        counter (a chain holds one version a ``put``, counters one apart): the rest of the
        path at once. A one-version delta's level is consecutive versions: the ``skip``
        below its base."""
        count = seg_count(row.payload)
        counter = row.version.split(".", 1)[0]
        if count is None or len(counter) != 10 or not counter.isdigit():
            skip = self.values.skip
            return self.store.lg_load_chain_below(
                tenant, thread, ns, row.channel, row.root, str(row.base), skip
            )
        top, counters, c = int(counter), [], count
        while c > 0:
            level = self.values.level(c)
            c -= self.values.skip**level if level else 1
            counters.append(f"{top - (count - c):010d}")
        return self.store.lg_load_chain_at(tenant, thread, ns, row.channel, row.root, counters)

    def _writes_loader(
        self, tenant: str, thread: str, ns: str, channel: str, checkpoint_ids: Iterable[Any]
    ) -> LoadWrites:
        """Reads, in one query per 500 checkpoints, the writes values refer to."""
        ids = [str(i) for i in checkpoint_ids if i is not None]
        rows = self.store.lg_load_channel_writes(tenant, thread, ns, channel, ids)

        def more(ns: str, checkpoint_id: str, channel: str) -> list[LgWrite]:
            return self.store.lg_load_channel_writes(tenant, thread, ns, channel, [checkpoint_id])

        return self._rows_loader(rows, more)

    def _rows_loader(
        self,
        rows: Sequence[LgWrite],
        more: Callable[[str, str, str], Sequence[LgWrite]] = lambda ns, cp, ch: [],
    ) -> LoadWrites:
        by_checkpoint: dict[tuple[str, str, str], list[LgWrite]] = defaultdict(list)
        for w in sorted(rows, key=lambda w: (w.task_path, w.task_id, w.idx)):
            by_checkpoint[(w.checkpoint_ns, w.checkpoint_id, w.channel)].append(w)

        def load(ns: str, checkpoint_id: str, channel: str) -> tuple[list[Any], int]:
            found = by_checkpoint.get((ns, checkpoint_id, channel)) or more(
                ns, checkpoint_id, channel
            )
            if not found:
                raise WaylineError(
                    f"the writes of checkpoint {checkpoint_id} that channel {channel!r} "
                    "refers to are missing from the store"
                )
            items: list[Any] = []
            for w in found:
                items.extend(self._loads(unpack(w.payload)))
            return items, sum(len(w.payload) for w in found)

        return load

    # -- async: the same methods, off the event loop --------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Commits at once: the threads of ``asyncio.to_thread`` are the event loop's shared
        executor (``min(32, cpus + 4)`` threads), and lingering writes of concurrent runs
        could hold every one of them while the ``aput`` they wait for queues behind them."""
        await asyncio.to_thread(self._put_writes, config, writes, task_id, task_path, linger=False)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
