"""The engine seam: what a worker needs from whatever executes a run.

A worker claims a run (the store's claim query, one for every engine), hands it to the
engine that serves its graph, and acts on how it ends. Two engines implement the seam:
``WaylineEngine`` (wayline's own loop, below) and ``wayline.langgraph.engine.LangGraphEngine``
(LangGraph's Pregel on ``WaylineSaver``); ``wayline.worker.engines`` picks one for a graph.
``tests/integration/test_engine_contract.py`` runs the same contract against both.

The contract, for every engine:
- **claim**: ``Engine.open(run, lease)`` binds a claimed run and its fencing token;
- **run until pause or end**: ``Execution.run()`` executes until the run finishes, waits
  (an interrupt, a breakpoint), stops (``lease.stop``: a graceful stop, a cancel, a lost
  lease) or fails;
- **commit**: every durable write it makes is conditional on ``lease.token`` (``LeaseLost``
  otherwise), and the lease is released on every way out;
- **report**: the run's row says how it ended (status, step, error) before ``run()``
  returns or raises, and ``run()`` returns that status. A node error propagates (the
  worker retries it or leaves it failed: the dead letter); ``loaded`` says whether the
  run's committed state had been read when it did (an unreadable run is not retried).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from wayline.graph.checkpoint import (
    encode_inbox,
    inbox_breakpoints,
    inbox_run_config,
    inbox_stream_modes,
)
from wayline.graph.compiled import CompiledGraph
from wayline.graph.loop import RunLoop
from wayline.ids import RunRef
from wayline.store.base import Store
from wayline.store.records import CommitBatch, RunRecord
from wayline.worker.emitted import ATTEMPT, EMITTED_MODES, EmitSink

__all__ = [
    "Engine",
    "EngineKind",
    "Execution",
    "Lease",
    "WaylineEngine",
]

EngineKind = Literal["wayline", "langgraph"]

Committer = Callable[[str, str, int, CommitBatch], None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Lease:
    """The claim a worker hands an engine: who holds the run, for how long, under which
    fencing token, and the event that asks the execution to stop at its next step."""

    owner: str
    lease_seconds: float
    token: int
    stop: threading.Event
    committer: Committer | None = None
    """How step commits are written (the worker's group commit; None: one by one)."""


@runtime_checkable
class Execution(Protocol):
    """One claimed run on one engine."""

    @property
    def loaded(self) -> bool:
        """Whether the run's committed state was read (a failure before it: unreadable)."""
        ...

    def run(self) -> str:
        """Run until pause or end; returns the run's status (the row says it too)."""
        ...

    @property
    def final_step(self) -> int | None:
        """The step its last commit wrote, once ``run`` returned ``done`` (None: not known
        here; the metrics read it from the row)."""
        ...

    def cancel(self) -> None:
        """A cancellation was requested: stop at the next step boundary, as ``cancelled``."""
        ...


@runtime_checkable
class Engine(Protocol):
    """A graph a worker serves, on the engine that executes it."""

    kind: EngineKind
    name: str
    version: str
    schema_version: str
    fingerprint: str
    """The graph's structural fingerprint (nodes, edges, channels), recorded on its runs;
    a worker claims only runs of the fingerprints it serves."""
    shape_json: str | None

    def bind(self, store: Store) -> Engine:
        """The same graph on the worker's store."""
        ...

    def encode_input(self, value: Any, breakpoints: Any = None) -> bytes:
        """A run's queued input as this engine reads it back (``Wayline.start``)."""
        ...

    def labels(self) -> dict[str, str]:
        """The data class of each labelled channel (the run row's ``classes``)."""
        ...

    def open(self, run: RunRecord, lease: Lease) -> Execution:
        """Bind a claimed run (raises for a run this engine cannot take: left failed)."""
        ...


class WaylineEngine:
    """wayline's own loop behind the seam."""

    kind: EngineKind = "wayline"

    def __init__(self, graph: CompiledGraph) -> None:
        self.graph = graph
        self.name = graph.name
        self.version = graph.version
        self.schema_version = graph.schema_version
        self.fingerprint = graph.fingerprint
        self.shape_json: str | None = graph.shape_json

    def bind(self, store: Store) -> WaylineEngine:
        return self if store is self.graph.store else WaylineEngine(self.graph.with_store(store))

    def encode_input(self, value: Any, breakpoints: Any = None) -> bytes:
        return encode_inbox(self.graph.codec, value, breakpoints)

    def labels(self) -> dict[str, str]:
        return dict(self.graph.schema.classes)

    def open(self, run: RunRecord, lease: Lease) -> _WaylineExecution:
        graph = self.graph
        sink = _emit_sink(graph.store, graph, run, lease.token)
        commit = lease.committer
        if sink is not None and commit is not None:
            commit = sink.wrap(commit)
        ref = RunRef(run.tenant_id, run.run_id)
        queued = {} if run.inbox is None else inbox_run_config(graph.codec, run.inbox)
        loop = graph.open_loop(
            ref,
            **_run_config(ref, queued.get("config")),
            durability=run.durability,
            owner=lease.owner,
            lease_seconds=lease.lease_seconds,
            token=lease.token,
            stop=lease.stop,
            claimed_run=run,
            committer=commit,
        )
        if queued.get("context") is not None:
            loop.invocation.context = queued["context"]
        if sink is not None:
            loop.invocation.emit = sink
            loop.invocation.chat_callbacks = _chat_stream(sink)
            sink.step_of = lambda: loop.step + 1
            sink.mark(run.step + 1)  # what follows is this attempt's
        loop.step_events = False  # nothing reads them here (a traced graph turns them on)
        return _WaylineExecution(graph, run, loop, sink)


class _WaylineExecution:
    def __init__(
        self, graph: CompiledGraph, run: RunRecord, loop: RunLoop, sink: EmitSink | None
    ) -> None:
        self.graph, self.record, self.loop, self.sink = graph, run, loop, sink

    @property
    def loaded(self) -> bool:
        return bool(self.loop.loaded)

    def run(self) -> str:
        breakpoints = _queued_breakpoints(self.graph, self.record)
        for _ in self.graph.run_loop(self.loop, None, breakpoints=breakpoints):
            pass
        if self.sink is not None:
            self.sink.close()  # emitted in a step that committed nothing after (an interrupt)
        if self.loop.finished:  # its last commit said so: no read to learn it (a read a run)
            return "done"
        run = self.graph.store.get_run(self.record.tenant_id, self.record.run_id)
        return "unknown" if run is None else run.status

    @property
    def final_step(self) -> int | None:
        return self.loop.step if self.loop.finished else None

    def cancel(self) -> None:
        self.loop.cancelled = True


def _emit_sink(store: Store, graph: CompiledGraph, run: RunRecord, token: int) -> EmitSink | None:
    """The sink recording what nodes emit, when the queued input asked for it (None: not)."""
    if run.inbox is not None:
        modes = inbox_stream_modes(graph.codec, run.inbox)
    else:  # taken over (or continued) after the input was consumed: what its claim asked
        mark = store.last_stream_event(run.tenant_id, run.run_id, ATTEMPT)
        modes = frozenset() if mark is None else frozenset(graph.codec.loads(mark.payload))
    if not modes & EMITTED_MODES:
        return None
    return EmitSink(store, graph.codec, run.tenant_id, run.run_id, token, modes)


def _chat_stream(sink: EmitSink) -> Any:
    """Chat-model tokens to ``sink``, through the mechanism ``stream_mode="messages"``
    uses in process (None: not asked, or no langchain-core, so no chat model to stream)."""
    if "messages" not in sink.modes:
        return None
    try:
        from wayline.interop.lc_stream import ChatStream
    except ImportError:
        return None
    return ChatStream(sink)


def _run_config(ref: RunRef, given: Any) -> dict[str, Any]:
    """``open_loop``'s config and step limit for a config queued with the input (an
    assistant's, with the run's over it): the run's own ids win over any it names."""
    if not isinstance(given, dict) or not given:
        return {}
    own = ref.config()
    configurable = {**(given.get("configurable") or {}), **own["configurable"]}
    out: dict[str, Any] = {"config": {**given, "configurable": configurable}}
    limit = given.get("recursion_limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        out["step_limit"] = limit
    return out


def _queued_breakpoints(
    graph: CompiledGraph, run: RunRecord
) -> tuple[frozenset[str], frozenset[str]] | None:
    """The ``interrupt_before``/``interrupt_after`` queued with the run's input (None: the
    graph's compiled-in ones). They hold for the invocation that takes this inbox."""
    given = None if run.inbox is None else inbox_breakpoints(graph.codec, run.inbox)
    return None if given is None else graph.breakpoints(*given)
