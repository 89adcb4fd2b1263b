"""Small channel values kept in their checkpoint's own row, not in rows of their own.

Why: a SQLite commit costs by the pages it dirties (each is a 4 KiB WAL frame written, and
fsync'd at ``synchronous=FULL``), and each channel's version row lands in its own leaf of
``lg_values`` and of its version index. A step of the bench graph (a list, a counter and
LangGraph's ``branch:to:step``) dirtied ~21 pages, ~9.7 of them ``lg_values``'; a counter's
or a routing channel's value is a few bytes, which the checkpoint row (sealed and
checksummed with it) holds for no page, index entry or meter row of its own.

The rule: a version whose full copy is at most ``max_bytes`` stored is inline, in every
checkpoint whose ``channel_versions`` name it (not only the one that introduced it), so a
checkpoint reads its small values from its own row and nothing else. For a channel a
``put`` leaves unchanged, the saver knows whether its version is inline from what it wrote
or read (``note``); for one it never saw, it encodes the checkpoint's value of it (the same
value: LangGraph gives a channel a new version whenever its value changes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["INLINE_KEY", "InlineValues"]

INLINE_KEY = "inline"
"""The key of a checkpoint row's small values: channel -> the version's stored payload."""

Key = tuple[str, str, str, str]
"""(tenant, thread, namespace, channel)"""


class InlineValues:
    """Per channel, the newest version this saver wrote or read and its inline payload
    (None: the version has an ``lg_values`` row)."""

    def __init__(self, max_bytes: int = 32, max_keys: int = 10_000) -> None:
        self.max_bytes = max_bytes
        self.max_keys = max_keys
        self._known: OrderedDict[Key, tuple[str, bytes | None]] = OrderedDict()
        self._lock = threading.Lock()

    def fits(self, payload: bytes) -> bool:
        return len(payload) <= self.max_bytes

    def note(self, key: Key, version: str, payload: bytes | None) -> None:
        with self._lock:
            self._known[key] = (version, payload)
            self._known.move_to_end(key)
            while len(self._known) > self.max_keys:
                self._known.popitem(last=False)

    def known(self, key: Key, version: str) -> tuple[bool, bytes | None]:
        """(whether this saver knows the version's form, its inline payload or None)."""
        with self._lock:
            found = self._known.get(key)
        if found is None or found[0] != version:
            return False, None
        return True, found[1]

    def forget(self, tenant: str, thread: str) -> None:
        with self._lock:
            for key in [k for k in self._known if k[0] == tenant and k[1] == thread]:
                del self._known[key]
