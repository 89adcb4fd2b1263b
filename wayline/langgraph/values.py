"""Channel values of LangGraph checkpoints as wayline stores them: each (channel, version)
once; a list that grew by appending stored as the appended items only; a full copy when
the suffixes since the last one outgrow it.

Why geometric full copies: a list gaining an item per step, stored in full every k steps,
costs O(n^2 / k) bytes over n steps, so any fixed k brings the quadratic term back at a
larger n. Here a full copy is written when the suffix bytes since the previous full copy
would exceed ``ratio`` times its size (at least ``min_full`` bytes): the full copies of an
append-only channel then add up to at most ``(1 + 1/ratio)`` times its final size, and
reading any version reads at most ``1 + ratio`` times that version's own bytes.

Skip rows bound the rows a read walks (a fresh process reading a long thread): the version
at the k-th delta since the full copy, when ``skip ** j`` divides k, stores the last
``skip ** j`` versions' items inline (``SEG``, carrying k) over the version that many back.
A read follows bases from its version: the sum of k's base-``skip`` digits, at most
``skip - 1`` rows a level. The cost: each item stored once more per level.

Deduplicated against writes: a task's writes are stored anyway (``put_writes``, pending
writes of the parent checkpoint); when the items a version appended are exactly those
writes' values, in LangGraph's order (``writes_sort_key``), the version is stored as a
reference to them (``writes_of``) rather than a second copy: one copy of each item per
step. LangGraph stores writes in the background, concurrently with the next checkpoint, so
the checkpoint's transaction also inserts the writes it refers to (a no-op when
``put_writes`` got there first); a deletion of those writes first copies the items into the
value's row (``WaylineSaver.delete_for_runs``).

Payloads are ``type NUL data`` of LangGraph's serializer. Only the serializer's safe types
are decoded (``json``, ``msgpack`` with an allowlist of modules, ``bytes``, ``null``):
``pickle`` is refused before the serializer sees it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, cast

from wayline.errors import CodecError
from wayline.store.lg_records import LgValue

__all__ = ["EMPTY", "Head", "ParentWrites", "ValueCodec", "channel_label", "pack", "unpack"]

EMPTY = "empty"
"""The type of a version whose channel had no value (it was cleared)."""
_VIEW_OVER = 65_536
"""A msgpack payload larger than this is decoded from a view of the row's bytes."""
SAFE_TYPES = frozenset({"json", "msgpack", "bytes", "bytearray", "null", EMPTY})

LoadWrites = Callable[[str, str, str], tuple[list[Any], int]]
"""(namespace, checkpoint id, channel) -> the channel's pending write values concatenated,
in LangGraph's order, and their stored bytes."""


@dataclasses.dataclass(frozen=True, slots=True)
class ParentWrites:
    """A channel's pending writes of the parent checkpoint, in LangGraph's order: each
    write's stored row and how many items its list had. A value that refers to them is
    stored in the same transaction as ``rows`` (a no-op for rows already there)."""

    checkpoint_id: str
    counts: tuple[int, ...]
    rows: tuple[Any, ...]

    @property
    def nbytes(self) -> int:
        return sum(len(row.payload) for row in self.rows)


def pack(type_: str, data: bytes) -> bytes:
    return type_.encode() + b"\x00" + data


BY_REFERENCE = pack("writes", b"")
"""The payload of a version stored by reference to its parent checkpoint's writes."""


def unpack(payload: bytes) -> tuple[str, bytes]:
    cut = payload.find(b"\x00", 0, 17)
    if cut < 0:
        raise CodecError(
            "a stored LangGraph value has no type tag: the row is corrupt, or sealed and read "
            "without its keys (open the store with keys=...)"
        )
    type_ = payload[:cut].decode(errors="replace")
    if type_ not in SAFE_TYPES:
        raise CodecError(
            f"a stored LangGraph value has type {type_!r}: wayline reads only "
            f"{', '.join(sorted(SAFE_TYPES))} (never pickle); re-save it with a safe serializer"
        )
    if type_ == "msgpack" and len(payload) > _VIEW_OVER:
        # ormsgpack reads a buffer: no copy of a long list's full copy (2.5 ms for 4 MB)
        return type_, cast(bytes, memoryview(payload)[cut + 1 :])
    return type_, payload[cut + 1 :]


def channel_label(channel: str) -> str:
    """The meter's name for a channel: LangGraph's routing and bookkeeping channels get a
    ``__`` prefix, so the instrument counts only state keys as payload."""
    if channel.startswith("__") or ":" in channel:
        return "__lg:" + channel
    return channel


@dataclasses.dataclass(frozen=True, slots=True)
class Head:
    """The newest version of a channel this process wrote or read, and its chain."""

    version: str
    value: Any
    root: str
    root_bytes: int
    chain_bytes: int
    count: int = 0
    """Versions since the full copy ``root``."""
    anchors: tuple[tuple[str, int], ...] = ()
    """Per level j >= 1, the (version, list length) at the last count divisible by
    ``skip ** j`` (the root where none was written yet)."""
    root_items: int = 0


SEG = b"seg\x00"
"""The tag of a row appending ``skip ** j`` versions' items at once (a skip row): ``seg NUL
count NUL payload``, with the count of versions since the root."""


def seg_count(payload: bytes) -> int | None:
    """The count a skip row carries, or None for any other row."""
    if not payload.startswith(SEG):
        return None
    cut = payload.index(b"\x00", len(SEG))
    return int(payload[len(SEG) : cut])


class ValueCodec:
    """Encodes new versions against the heads it remembers, decodes stored chains."""

    def __init__(
        self,
        dumps: Callable[[Any], tuple[str, bytes]],
        loads: Callable[[tuple[str, bytes]], Any],
        *,
        ratio: float = 2.0,
        min_full: int = 16_384,
        max_heads: int = 10_000,
        skip: int = 64,
    ) -> None:
        self.dumps = dumps
        self.loads = loads
        self.ratio = ratio
        self.min_full = min_full
        self.max_heads = max_heads
        self.skip = skip
        self._heads: dict[tuple[str, str, str, str], Head] = {}
        self._lock = threading.Lock()

    # -- writing ----------------------------------------------------------------------

    def encode(
        self,
        key: tuple[str, str, str, str],
        version: str,
        value: Any,
        present: bool,
        writes: ParentWrites | None = None,
    ) -> tuple[LgValue, Head]:
        """The row for a new version of the channel ``key`` (tenant, thread, ns, channel),
        and the head to remember once the row is durable (``remember``)."""
        ns, channel = key[2], key[3]
        if not present:
            row = LgValue(ns, channel, version, None, version, None, pack(EMPTY, b""))
            return row, Head(version, None, version, 0, 0)
        head = self._heads.get(key)
        old = None if head is None else head.value
        if (
            head is not None
            and type(value) is list
            and type(old) is list
            and value is not old  # a list changed in place cannot be told from its past
            and len(value) >= len(old)
            and value[: len(old)] == old
        ):
            count = head.count + 1
            level = self.level(count)
            base = head.version
            if level:
                base, start = self._anchor(head, level)
                payload = SEG + str(count).encode() + b"\x00" + pack(*self.dumps(value[start:]))
                cost, writes_of = len(payload), None
            else:
                suffix = value[len(old) :]
                if writes is not None and self._is_made_of(suffix, writes):
                    payload, cost, writes_of = BY_REFERENCE, writes.nbytes, writes.checkpoint_id
                else:
                    payload = pack(*self.dumps(suffix))
                    cost, writes_of = len(payload), None
            chain = head.chain_bytes + cost  # every row since the root (skip rows too)
            if chain <= self.ratio * max(head.root_bytes, self.min_full):
                row = LgValue(ns, channel, version, base, head.root, writes_of, payload)
                mark = (version, len(value))
                anchors = (mark,) * level + head.anchors[level:]
                return row, dataclasses.replace(
                    head,
                    version=version,
                    value=value,
                    chain_bytes=chain,
                    count=count,
                    anchors=anchors,
                )
        payload = pack(*self.dumps(value))
        row = LgValue(ns, channel, version, None, version, None, payload)
        items = len(value) if type(value) is list else 0
        return row, Head(version, value, version, len(payload), 0, root_items=items)

    def level(self, count: int) -> int:
        """The largest j with ``skip ** j`` dividing ``count`` (0: a one-version delta)."""
        level = 0
        while count % self.skip == 0:
            count //= self.skip
            level += 1
        return level

    def _anchor(self, head: Head, level: int) -> tuple[str, int]:
        if len(head.anchors) >= level:
            return head.anchors[level - 1]
        return head.root, head.root_items

    def _is_made_of(self, suffix: list[Any], writes: ParentWrites) -> bool:
        """Whether the appended items serialize to exactly the stored writes' bytes (bytes,
        not equality: a reducer may change a written object after it was stored, as
        ``add_messages`` gives a message without an id one)."""
        if sum(writes.counts) != len(suffix):
            return False
        pos = 0
        for n, row in zip(writes.counts, writes.rows, strict=True):
            if pack(*self.dumps(suffix[pos : pos + n])) != row.payload:
                return False
            pos += n
        return True

    def remember(self, key: tuple[str, str, str, str], head: Head) -> None:
        with self._lock:
            if len(self._heads) >= self.max_heads and key not in self._heads:
                self._heads.pop(next(iter(self._heads)))
            self._heads[key] = head

    def forget(self, tenant: str, thread: str) -> None:
        with self._lock:
            for key in [k for k in self._heads if k[0] == tenant and k[1] == thread]:
                del self._heads[key]

    # -- reading ----------------------------------------------------------------------

    def decode_full(self, row: LgValue) -> tuple[bool, Any]:
        """(present, value) of a full copy."""
        type_, data = unpack(row.payload)
        if type_ == EMPTY:
            return False, None
        return True, self.loads((type_, data))

    def suffix(self, row: LgValue, load_writes: LoadWrites) -> tuple[list[Any], int]:
        """The items a suffix row appended, and the bytes read for them."""
        if row.payload.startswith(SEG):
            inner = row.payload[row.payload.index(b"\x00", len(SEG)) + 1 :]
            return self.loads(unpack(inner)), len(row.payload)
        if row.writes_of is None:
            return self.loads(unpack(row.payload)), len(row.payload)
        return load_writes(row.checkpoint_ns, row.writes_of, row.channel)

    def decode_chain(
        self,
        target: LgValue,
        chain: dict[str, LgValue],
        load_writes: LoadWrites,
        fetch: Callable[[str], LgValue | None] = lambda version: None,
    ) -> tuple[Any, Head]:
        """The value of ``target`` from the rows of its chain (by version), and its head.
        ``fetch`` finds a base outside the chain (a version another writer stored first,
        with its own full copy)."""
        parts = [target]
        row = target
        while row.base is not None:
            base = chain.get(row.base) or fetch(row.base)
            if base is None:
                raise CodecError(
                    f"version {row.base} of channel {row.channel!r} is missing from the store "
                    "(the chain of a stored value is broken)"
                )
            parts.append(base)
            row = base
        present, value = self.decode_full(row)
        if not present or type(value) is not list:
            if len(parts) > 1:
                raise CodecError(f"channel {row.channel!r}: a suffix stored over a non-list")
            return value, Head(target.version, value, row.version, len(row.payload), 0)
        value = list(value)
        root_items = len(value)
        chain_bytes = 0
        marks_up = [(len(value), 0)]
        for part in reversed(parts[:-1]):
            items, nbytes = self.suffix(part, load_writes)
            value.extend(items)
            chain_bytes += nbytes
            marks_up.append((len(value), chain_bytes))
        counts = self.counts(parts)
        count = counts[0]
        marks = {
            c: (p.version, n)
            for c, p, (n, _) in zip(counts, parts, reversed(marks_up), strict=True)
        }
        anchors = []
        step = self.skip
        while step <= count:
            mark = marks.get(count // step * step)
            if mark is None:  # not on the path: build no skip rows over it
                break
            anchors.append(mark)
            step *= self.skip
        head = Head(
            target.version,
            value,
            row.version,
            len(row.payload),
            chain_bytes,
            count,
            tuple(anchors),
            root_items,
        )
        return value, head

    @staticmethod
    def counts(parts: list[LgValue]) -> list[int]:
        """Per row of a path (newest first, root last), its count of versions since the
        root: a skip row carries its own, a one-version delta is one more than its base."""
        out = [0] * len(parts)
        for i in range(len(parts) - 2, -1, -1):
            carried = seg_count(parts[i].payload)
            out[i] = out[i + 1] + 1 if carried is None else carried
        return out
