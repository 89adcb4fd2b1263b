"""What nodes emit while a worker runs them (``get_stream_writer()`` chunks: stream mode
``custom``; chat-model tokens: ``messages``), recorded for the server's streams when the
run's queued input asked for it.

The sink is the loop's ``Invocation.emit`` (and, for ``messages``, the same
``wayline.interop.lc_stream.ChatStream`` that ``stream(stream_mode="messages")`` uses in
process): a chunk is encoded and buffered with the step it belongs to and the node that
emitted it. The buffer is appended to the store in one transaction just before each commit
(the committer is wrapped), so a step's events are stored before its delta and a stream
reading both replays them ahead of that step's ``updates``. Tokens are appended while the
node runs too, at most every ``FLUSH_SECONDS`` (the first at once), so a chat client sees
them before the step ends. Every append is fenced by the lease token: a worker that lost
the run writes nothing.

Each claim that records starts with an attempt mark (mode ``ATTEMPT``: the modes
recorded), so a stream tells a replacement worker's tokens from those of the worker that
died mid-node (a new ``metadata`` event with the next attempt), and a worker that takes the
run over without its queued input (consumed by the first commit) records what it asked.
A run that asked for none of these modes gets no sink and records nothing; a claim without
its input (a takeover, a continue) pays one indexed read for the mark.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from wayline.codec import Codec
from wayline.graph.context import _SCOPE
from wayline.store.base import Store
from wayline.store.records import CommitBatch
from wayline.store.stream_sql import StreamEvent
from wayline.store.writer import Committer

__all__ = ["ATTEMPT", "EMITTED_MODES", "FLUSH_SECONDS", "EmitSink"]

EMITTED_MODES = frozenset({"custom", "messages"})
"""The stream modes a worker records as nodes emit them."""
ATTEMPT = "__attempt__"
"""The mode of the mark each recording claim starts with (payload: the modes recorded)."""
FLUSH_SECONDS = 0.02
"""Tokens wait at most this long in the buffer before they are appended."""


class EmitSink:
    def __init__(
        self,
        store: Store,
        codec: Codec,
        tenant_id: str,
        run_id: str,
        token: int,
        modes: frozenset[str],
    ) -> None:
        self.store = store
        self.codec = codec
        self.key = (tenant_id, run_id)
        self.token = token
        self.modes = modes & EMITTED_MODES
        self.step_of: Callable[[], int] = lambda: 0
        """The step a chunk emitted now belongs to (set once the loop is open)."""
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one append at a time: each numbers on the last
        self._pending: list[StreamEvent] = []
        self._timer: threading.Timer | None = None
        self._last_flush = 0.0
        self.stored = 0

    def mark(self, step: int) -> None:
        """Start this claim's record: the attempt mark, stored at once."""
        payload = self.codec.dumps(sorted(self.modes))
        self.stored += self.store.append_stream_events(
            *self.key, self.token, [StreamEvent(step, "", ATTEMPT, payload)]
        )

    def __call__(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        if namespace or mode not in self.modes:
            return  # a subgraph's events: not recorded yet
        scope = _SCOPE.get(None)
        self.add(self.step_of(), "" if scope is None else scope.node, mode, chunk)

    def add(self, step: int, node: str, mode: str, chunk: Any) -> None:
        """Record ``chunk`` of ``mode``, emitted by ``node`` in ``step`` (an engine that knows
        both itself: LangGraph's, ``wayline.langgraph.emitting``)."""
        event = StreamEvent(step, node, mode, self.codec.dumps(chunk))
        with self._lock:
            self._pending.append(event)
            if not mode.startswith("messages") or self._timer is not None:
                return
            wait = self._last_flush + FLUSH_SECONDS - time.monotonic()
            if wait > 0:  # a burst of tokens: appended together, shortly
                self._timer = threading.Timer(wait, self._flush_timed)
                self._timer.daemon = True
                self._timer.start()
                return
        self.flush()  # the first token of a while: at once

    def _flush_timed(self) -> None:
        with self._lock:
            self._timer = None
        with contextlib.suppress(Exception):  # the store is away: the commit's flush says
            self.flush()

    def flush(self) -> None:
        """Append what was emitted since the last flush (nothing to do: no query)."""
        with self._flushing:
            with self._lock:
                events, self._pending = self._pending, []
                self._last_flush = time.monotonic()
            if events:
                self.stored += self.store.append_stream_events(*self.key, self.token, events)

    def close(self) -> None:
        """Flush what is left (a step that committed nothing after: an interrupt)."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self.flush()

    def wrap(self, committer: Committer) -> Committer:
        """``committer``, flushing the events first: they are durable before the step."""

        def commit(tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
            self.flush()
            committer(tenant_id, run_id, token, batch)

        return commit
