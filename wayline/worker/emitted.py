"""What nodes emit while a worker runs them (``get_stream_writer()`` chunks: stream mode
``custom``), recorded for the server's streams when the run's queued input asked for it.

The sink is the loop's ``Invocation.emit``: a node's chunk is encoded and buffered with the
step it belongs to and the node that emitted it; the buffer is appended to the store in
one transaction just before each commit (the committer is wrapped), so a step's events are
stored before its delta and a stream reading both replays them ahead of that step's
``updates``. The append is fenced by the lease token: a worker that lost the run writes
nothing. A run that asked for none of these modes gets no sink and pays nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from wayline.codec import Codec
from wayline.graph.context import _SCOPE
from wayline.store.base import Store
from wayline.store.records import CommitBatch
from wayline.store.stream_sql import StreamEvent
from wayline.store.writer import Committer

__all__ = ["EMITTED_MODES", "EmitSink"]

EMITTED_MODES = frozenset({"custom"})
"""The stream modes a worker records as nodes emit them."""


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
        self._pending: list[StreamEvent] = []
        self.stored = 0

    def __call__(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        if namespace or mode not in self.modes:
            return  # a subgraph's events: not recorded yet
        scope = _SCOPE.get(None)
        node = "" if scope is None else scope.node
        event = StreamEvent(self.step_of(), node, mode, self.codec.dumps(chunk))
        with self._lock:
            self._pending.append(event)

    def flush(self) -> None:
        """Append what was emitted since the last flush (nothing to do: no query)."""
        with self._lock:
            events, self._pending = self._pending, []
        if events:
            self.stored += self.store.append_stream_events(*self.key, self.token, events)

    def wrap(self, committer: Committer) -> Committer:
        """``committer``, flushing the events first: they are durable before the step."""

        def commit(tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
            self.flush()
            committer(tenant_id, run_id, token, batch)

        return commit
