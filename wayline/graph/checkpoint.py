"""The on-disk format of steps and snapshots, and reconstruction from them.

A delta is ``[[node, path, [[key, value_bytes], ...]], ...]`` in fold order, each value
encoded on its own, so the meter can attribute every byte to a channel and a value above
the blob threshold can be swapped for a reference to a content-addressed blob. The envelope
is plain msgpack (no extension types); values go through the codec.

Reconstruction is the nearest snapshot plus a re-fold of the later deltas through
``apply_step``, the function execution used, with the batches execution used. Append-only
channels come back from their segments (``wayline.graph.segments``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import ormsgpack

from wayline.classes import Redacted
from wayline.codec import EXT_REF, Codec
from wayline.errors import CodecError, CorruptionError, VersionMismatchError
from wayline.graph.algo import TaskResult, TaskSpec, apply_step
from wayline.graph.channels import MISSING, AppendLog, Channel
from wayline.graph.channels.tombstone import Tombstone
from wayline.graph.segments import LogIndex, Segment, advance
from wayline.graph.types import Command, Send
from wayline.store.base import Store
from wayline.store.records import BlobRecord, CommitBatch, SegmentRecord, SnapshotRecord
from wayline.store.subject_keys import SubjectUnseal, is_sealed

__all__ = [
    "DEFAULT_BLOB_THRESHOLD",
    "Breakpoints",
    "Encoded",
    "Reconstructed",
    "decode_inbox",
    "decode_results",
    "decode_value",
    "encode_inbox",
    "encode_results",
    "encode_snapshot",
    "inbox_breakpoints",
    "inbox_run_config",
    "inbox_stream_modes",
    "reconstruct",
    "state_digest",
    "write_snapshot",
]

DEFAULT_BLOB_THRESHOLD = 64 * 1024
FORMAT_VERSION = 1
_REF_PREFIX = bytes([0xC7, 32, EXT_REF])  # msgpack ext8, 32 bytes, code EXT_REF


@dataclasses.dataclass(slots=True)
class Encoded:
    payload: bytes
    channels: tuple[tuple[str, int], ...]
    blobs: list[BlobRecord]


class Seal(Protocol):
    """Seals the values of classified keys (``wayline.store.subject_keys.SubjectSeal``)."""

    def seal(self, key: str, data: bytes) -> bytes: ...


class _ValueWriter:
    """Encodes values one by one, moving large ones to blobs and counting bytes per key;
    with ``seal``, a classified value is sealed under its subject's key first."""

    def __init__(self, codec: Codec, step: int, threshold: int, seal: Seal | None = None) -> None:
        self.codec = codec
        self.step = step
        self.threshold = threshold
        self.seal = seal
        self.sizes: dict[str, int] = defaultdict(int)
        self.blobs: list[BlobRecord] = []

    def write(self, key: str, value: Any, node: str | None = None) -> bytes:
        """``node``: the node that wrote it (None: a snapshot), named if it cannot be stored."""
        try:
            data = self.codec.dumps(value)
        except CodecError as exc:
            who = "snapshot" if node is None else f"node {node!r}"
            raise CodecError(
                f"{who} wrote a value to {key!r} that cannot be stored: {exc}"
            ) from None
        if self.seal is not None:
            data = self.seal.seal(key, data)
        if len(data) > self.threshold:
            digest = hashlib.sha256(data).digest()
            self.blobs.append(BlobRecord(digest.hex(), data, key, self.step))
            data = _REF_PREFIX + digest
        self.sizes[key] += len(data)
        return data

    def done(self, payload: bytes) -> Encoded:
        return Encoded(payload, tuple(self.sizes.items()), self.blobs)


def encode_results(
    codec: Codec,
    results: Sequence[TaskResult],
    *,
    step: int,
    threshold: int,
    seal: Seal | None = None,
) -> Encoded:
    out = _ValueWriter(codec, step, threshold, seal)
    wire = [
        [r.name, list(r.path), [[k, out.write(k, v, r.name)] for k, v in r.writes]] for r in results
    ]
    return out.done(ormsgpack.packb(wire))


Resolver = Callable[[str], bytes]
"""A blob's bytes by digest (``BlobCache``, which also opens subject-sealed values)."""


def decode_results(
    codec: Codec, payload: bytes, resolve: Resolver, row: Sequence[Any] = ("writes", "?")
) -> list[TaskResult]:
    """Task results from a delta or pending-writes payload; ``row`` (the row's identity,
    as the store names it) is what a CorruptionError names if the envelope is damaged."""
    try:
        wire = [(name, tuple(path), writes) for name, path, writes in ormsgpack.unpackb(payload)]
    except (ValueError, TypeError) as exc:  # ormsgpack's decode error is a ValueError
        raise CorruptionError.of(row, f"it does not decode ({exc})") from None
    return [
        TaskResult(name, path, tuple((k, decode_value(codec, b, resolve)) for k, b in writes))
        for name, path, writes in wire
    ]


def decode_value(codec: Codec, data: bytes, resolve: Resolver) -> Any:
    """One stored value: resolved from its blob if it was stored by reference."""
    if len(data) == 35 and data.startswith(_REF_PREFIX):
        data = resolve(data[3:].hex())
    if is_sealed(data):
        unseal = getattr(resolve, "unseal", None)
        if unseal is None:
            raise CodecError("a value is sealed under a subject key: read it through its store")
        opened = unseal(data)
        if isinstance(opened, Redacted):
            return opened  # its subject's key was erased: crypto-shredded
        data = opened
    return codec.loads(data)


def encode_snapshot(
    codec: Codec,
    channels: Mapping[str, Channel],
    next_tasks: Sequence[TaskSpec],
    logs: Mapping[str, LogIndex],
    *,
    step: int,
    threshold: int,
    seal: Seal | None = None,
) -> tuple[SnapshotRecord, list[BlobRecord]]:
    """A snapshot: plain channels by value (large ones as blobs, so an unchanged large value
    costs a reference), append logs by index, and the next step's tasks."""
    out = _ValueWriter(codec, step, threshold, seal)
    values = {
        k: out.write(k, c.checkpoint())
        for k, c in channels.items()
        if c.value is not MISSING and k not in logs
    }
    wire = {
        "v": FORMAT_VERSION,
        "channels": values,
        "logs": {k: idx.to_wire() for k, idx in logs.items()},
        "next": out.write("__next__", [t.to_wire() for t in next_tasks]),
    }
    enc = out.done(ormsgpack.packb(wire))
    return SnapshotRecord(step, enc.payload, enc.channels), enc.blobs


def write_snapshot(
    batch: CommitBatch,
    codec: Codec,
    channels: Mapping[str, Channel],
    next_tasks: Sequence[TaskSpec],
    logs: Mapping[str, LogIndex],
    *,
    step: int,
    threshold: int,
    fresh: str | None = None,
    seal: Seal | None = None,
) -> dict[str, LogIndex]:
    """Add to ``batch`` a snapshot of ``channels`` after ``step``: append logs as the
    segments appended since their index (all of it, under a new salt, when ``fresh``
    names one: a migration), the rest by value, large values as blobs. Returns the new
    log indexes. The run loop and ``migrate_run`` both snapshot through here."""
    new_logs = dict(logs)
    for key, channel in channels.items():
        if not isinstance(channel, AppendLog):
            continue
        index, salt = (None, fresh) if fresh is not None else (logs.get(key), "")
        if channel.rewritten:  # overwritten, or an edited history: written anew
            index, salt = None, f"rewritten@{step}"
            channel.rewritten = False
        new_logs[key], segments = advance(index, key, step, len(channel.get()), salt=salt)
        batch.segments.extend(segment_records(codec, channel, segments, step, seal))
    snapshot, blobs = encode_snapshot(
        codec, channels, next_tasks, new_logs, step=step, threshold=threshold, seal=seal
    )
    batch.snapshots.append(snapshot)
    batch.blobs.extend(blobs)
    return new_logs


def segment_records(
    codec: Codec,
    channel: AppendLog,
    segments: Sequence[Segment],
    step: int,
    seal: Seal | None = None,
) -> list[SegmentRecord]:
    items = channel.get()

    def data(s: Segment) -> bytes:
        raw = codec.dumps(items[s.start : s.end])
        return raw if seal is None else seal.seal(channel.key, raw)

    return [
        SegmentRecord(s.seg_id, channel.key, s.level, s.after_step, s.last_step, data(s), step)
        for s in segments
    ]


def state_digest(codec: Codec, channels: Mapping[str, Channel]) -> str:
    """A digest of the channel values, stable across processes (sorted keys)."""
    h = hashlib.sha256()
    for key in sorted(channels):
        channel = channels[key]
        if channel.value is MISSING:
            continue
        h.update(key.encode())
        h.update(b"\x00")
        h.update(codec.dumps(channel.checkpoint()))
    return h.hexdigest()


@dataclasses.dataclass(slots=True)
class Reconstructed:
    channels: dict[str, Channel]
    next_tasks: list[TaskSpec]
    step: int
    snapshot_step: int | None
    logs: dict[str, LogIndex]
    folds: int
    """Deltas re-folded after the snapshot: at most ``snapshot_every``."""
    rows_read: int
    """Snapshot, segment, blob and delta rows read."""
    bytes_read: int = 0
    """Segment and delta bytes read: what the snapshot policy counts as the state's size."""


class BlobCache:
    """Resolves blob references against the store, each digest read once."""

    def __init__(self, store: Store, tenant_id: str) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.cache: dict[str, bytes] = {}
        self.unsealer = SubjectUnseal(store, tenant_id)

    def unseal(self, data: bytes) -> bytes | Redacted:
        """A value sealed under a subject key, opened; its tombstone if the key was erased."""
        return self.unsealer.open(data)

    def __call__(self, digest: str) -> bytes:
        data = self.cache.get(digest)
        if data is None:
            data = self.cache[digest] = self.store.load_blob(self.tenant_id, digest)
        return data


def reconstruct(
    store: Store,
    codec: Codec,
    channels: dict[str, Channel],
    tenant_id: str,
    run_id: str,
    through: int,
) -> Reconstructed:
    """State after step ``through``, folded onto ``channels`` (fresh, from the schema)."""
    try:
        return _reconstruct(store, codec, channels, tenant_id, run_id, through)
    except KeyError as exc:
        raise VersionMismatchError(
            f"run {run_id!r} holds state key {exc.args[0]!r}, which this graph's state "
            "schema does not declare (renamed or removed?): resume it on the code that "
            "wrote it, or carry it forward with a migration; nothing was changed"
        ) from None


def _reconstruct(
    store: Store,
    codec: Codec,
    channels: dict[str, Channel],
    tenant_id: str,
    run_id: str,
    through: int,
) -> Reconstructed:
    resolve = BlobCache(store, tenant_id)
    if through < 0:  # no step committed: nothing to read (a new run's start reads nothing)
        return Reconstructed(channels, [], -1, None, {}, 0, 0, 0)
    snapshot = store.load_snapshot(tenant_id, run_id, through)
    next_tasks: list[TaskSpec] = []
    logs: dict[str, LogIndex] = {}
    base, rows, nbytes = -1, 0, 0
    if snapshot is not None:
        rows += 1
        try:
            data = ormsgpack.unpackb(snapshot.payload)
            parts = (data["channels"], data["logs"], data["next"])
        except (ValueError, TypeError, KeyError) as exc:
            ident = ("snapshots", tenant_id, run_id, snapshot.step)
            raise CorruptionError.of(ident, f"it does not decode ({exc})") from None
        for key, value in parts[0].items():
            decoded = decode_value(codec, value, resolve)
            if isinstance(decoded, Redacted):
                channels[key] = Tombstone(key, decoded)
            else:
                channels[key].restore(decoded)
        logs = {k: LogIndex.from_wire(w) for k, w in data["logs"].items()}
        seg_rows, nbytes = _restore_logs(store, codec, channels, logs, tenant_id, run_id, resolve)
        rows += seg_rows
        next_tasks = [TaskSpec.from_wire(t) for t in decode_value(codec, data["next"], resolve)]
        base = snapshot.step
    folds = 0
    logs_here = [c for c in channels.values() if isinstance(c, AppendLog)]
    for log in logs_here:
        log.value = list(log.value)  # a list only this reconstruction holds...
        log.private = True
    try:
        for delta in store.load_deltas(tenant_id, run_id, base, through):
            if delta.step != base + 1:
                ident = ("deltas", tenant_id, run_id, base + 1)
                raise CorruptionError.of(ident, "the row is missing (the steps after it exist)")
            row = ("deltas", tenant_id, run_id, delta.step)
            results = decode_results(codec, delta.payload, resolve, row)
            _bury(channels, results)
            next_tasks = apply_step(channels, results)
            nbytes += len(delta.payload)
            base = delta.step
            folds += 1
        if base < through:
            ident = ("deltas", tenant_id, run_id, base + 1)
            raise CorruptionError.of(ident, f"the row is missing (the run committed {through})")
    finally:
        for log in logs_here:
            log.private = False  # ...until it is handed to the caller
    rows += folds + len(resolve.cache)
    snap_step = None if snapshot is None else snapshot.step
    return Reconstructed(channels, next_tasks, base, snap_step, logs, folds, rows, nbytes)


def _bury(channels: dict[str, Channel], results: Sequence[TaskResult]) -> None:
    """Replace each channel a redacted write went to by its tombstone (before the fold)."""
    for result in results:
        for key, value in result.writes:
            if isinstance(value, Redacted) and key in channels:
                channels[key] = Tombstone(key, value)


def _restore_logs(
    store: Store,
    codec: Codec,
    channels: dict[str, Channel],
    logs: Mapping[str, LogIndex],
    tenant_id: str,
    run_id: str,
    resolve: BlobCache,
) -> tuple[int, int]:
    """Rebuild append logs from their segments; return the rows and bytes read."""
    rows = nbytes = 0
    for key, index in logs.items():
        ids = [s.seg_id for s in index.segments]
        payloads = store.load_segments(tenant_id, run_id, ids)
        nbytes += sum(len(data) for data in payloads)
        parts = [resolve.unseal(data) if is_sealed(data) else data for data in payloads]
        rows += len(ids)
        erased = next((p for p in parts if isinstance(p, Redacted)), None)
        if erased is not None:
            channels[key] = Tombstone(key, erased)
            continue
        items = [x for data in parts if isinstance(data, bytes) for x in codec.loads(data)]
        if len(items) != index.length:
            raise CodecError(
                f"append log {key!r} reconstructs to {len(items)} items where its snapshot "
                f"recorded {index.length}: the store is missing segments"
            )
        channels[key].restore(items)
    return rows, nbytes


BreakpointNames: TypeAlias = "Sequence[str] | str | None"
Breakpoints: TypeAlias = "tuple[BreakpointNames, BreakpointNames]"
"""``(interrupt_before, interrupt_after)`` as given to a run: node names, ``"*"``, or None
(the graph's compiled-in ones)."""


def encode_inbox(
    codec: Codec,
    value: Any,
    breakpoints: Breakpoints | None = None,
    stream_modes: Sequence[str] = (),
    webhook: str | None = None,
    run_config: Mapping[str, Any] | None = None,
    subgraphs: bool = False,
) -> bytes:
    """A run's next input as stored for a worker: new input, or a Command (resume etc.),
    and the options the invocation that takes it runs with: the breakpoints the worker
    pauses at (``interrupt_before``/``interrupt_after`` given with it) and the stream modes
    of what nodes emit that it records for the server (``custom``, ``messages``). The
    options ride as one trailing element, only when given, so an inbox written before they
    existed decodes unchanged (and an older worker ignores a key it does not know)."""
    if isinstance(value, Command):
        goto = [value.goto] if isinstance(value.goto, str | Send) else list(value.goto)
        items: list[Any] = ["command", value.resume, value.update, goto]
    else:
        items = ["input", value]
    options: dict[str, Any] = {}
    if breakpoints is not None and breakpoints != (None, None):
        before, after = breakpoints
        options.update(interrupt_before=_names(before), interrupt_after=_names(after))
    if stream_modes:
        options["stream_modes"] = [str(m) for m in stream_modes]
    if webhook:  # told when the invocation's run waits or ends (wayline.worker.notify)
        options["webhook"] = webhook
    if run_config:  # an assistant's config and context (wayline serve), merged with the run's
        options["run_config"] = dict(run_config)
    if subgraphs and stream_modes:  # what subgraphs emit is recorded too (stream_subgraphs)
        options["stream_subgraphs"] = True
    if options:
        items.append(options)
    return codec.dumps(items)


def decode_inbox(codec: Codec, data: bytes) -> Any:
    kind, *rest = codec.loads(data)
    if kind == "command":
        resume, update, goto = rest[:3]
        return Command(resume=resume, update=update, goto=goto)
    return rest[0]


def _inbox_options(codec: Codec, data: bytes) -> dict[str, Any]:
    kind, *rest = codec.loads(data)
    options = rest[3] if kind == "command" and len(rest) > 3 else None
    if kind != "command" and len(rest) > 1:
        options = rest[1]
    return options if isinstance(options, dict) else {}


def inbox_breakpoints(codec: Codec, data: bytes) -> Breakpoints | None:
    """The breakpoints queued with an inbox (None: none given, the graph's own apply)."""
    options = _inbox_options(codec, data)
    if "interrupt_before" not in options and "interrupt_after" not in options:
        return None
    return options.get("interrupt_before"), options.get("interrupt_after")


def inbox_run_config(codec: Codec, data: bytes) -> dict[str, Any]:
    """The ``config`` and ``context`` queued with an inbox (``{"config", "context"}``;
    empty: the worker's own)."""
    given = _inbox_options(codec, data).get("run_config")
    return given if isinstance(given, dict) else {}


def inbox_stream_modes(codec: Codec, data: bytes) -> frozenset[str]:
    """The stream modes of node-emitted events queued with an inbox (empty: none)."""
    modes = _inbox_options(codec, data).get("stream_modes") or ()
    return frozenset(str(m) for m in modes)


def inbox_webhook(codec: Codec, data: bytes) -> str | None:
    """The webhook queued with an inbox (the API's ``webhook=``; None: none)."""
    hook = _inbox_options(codec, data).get("webhook")
    return hook if isinstance(hook, str) and hook else None


def _names(given: BreakpointNames) -> list[str] | str | None:
    if given is None or isinstance(given, str):
        return given
    return [str(n) for n in given]
