"""The lease a worker holds on the LangGraph thread it runs, carried to the saver in the
run's config, so that every checkpoint and pending write the thread makes is conditional
on the worker's fencing token (``wayline.langgraph.engine``).

LangGraph calls the checkpointer from its own threads with the config it was given; the
fence travels in ``configurable`` under a ``__`` key, which LangGraph keeps out of the
checkpoint's metadata.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from wayline.store.lg_records import LgFence

__all__ = ["FENCE_KEY", "QUEUED_KEY", "RunFence", "fence_of"]

FENCE_KEY = "__wayline_fence"
QUEUED_KEY = "wayline_queued"
"""The checkpoint metadata key holding what the invocation was queued with (its config,
context, webhook, stream modes: ``RunFence.queued``)."""


class RunFence:
    """One claimed execution of a thread: its fencing token, whether the run's queued
    input is still to be cleared (by the first write that applies it), and which graph and
    kind of claim its first read is timed for (``wayline.reconstruct.duration``)."""

    def __init__(
        self,
        token: int,
        owner: str,
        *,
        take_inbox: bool = True,
        queued: str | None = None,
        graph: str = "",
        recovery: bool = False,
    ) -> None:
        self.token = token
        self.owner = owner
        self.graph = graph
        self.recovery = recovery
        """The claim took the run from a worker whose lease expired (``taken_over``)."""
        self._take_inbox = take_inbox
        self._unread = True
        self._lock = threading.Lock()
        self.queued = queued
        """The options queued with the invocation's input, encoded (``QUEUED_KEY``): kept
        in the metadata of each root checkpoint it writes, since the first of them clears
        the inbox that held them; a worker taking the run over reads them back there."""

    def write(self, step: int | None) -> LgFence:
        """The fence of the next write; the first one takes the run's input with it (a
        retried write takes it again: clearing twice is clearing once)."""
        with self._lock:
            take, self._take_inbox = self._take_inbox, False
        return LgFence(self.token, step, take)

    def first_read(self) -> bool:
        """True once: the read that continues the run from its committed checkpoint."""
        with self._lock:
            first, self._unread = self._unread, False
        return first


def fence_of(config: Mapping[str, Any]) -> RunFence | None:
    """The fence a worker put in the config (None: the saver runs unfenced, as in a
    user's own process)."""
    found = (config.get("configurable") or {}).get(FENCE_KEY)
    return found if isinstance(found, RunFence) else None
