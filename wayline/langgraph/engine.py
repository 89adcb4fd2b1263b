"""LangGraph's own engine on wayline's workers: ``LangGraphEngine`` runs a LangGraph
``CompiledStateGraph`` (or an ``@entrypoint``) with LangGraph's Pregel loop, checkpointed
by ``WaylineSaver``, behind the worker's engine seam (``wayline.worker.engine``).

What wayline adds around LangGraph's loop:
- the run is claimed under a lease and heartbeated by the worker; every checkpoint and
  pending write goes through the saver under the worker's fence (``RunFence``): it commits
  only while the worker's fencing token is the run's, in the same transaction, so a worker
  that lost its lease writes nothing (``LeaseLost``) and the run's next holder continues
  from the last checkpoint;
- the run's queued input (``Wayline.start``) is cleared by the first write that applies
  it, so a kill before that write leaves it queued and a kill after does not apply it twice;
  what was queued with it (an assistant's config and context, a ``webhook=``, the stream
  modes to record) rides in each root checkpoint's metadata (``QUEUED_KEY``), so the worker
  that takes the run over after that write continues with the same config and context;
- the graph's long-term store, unless it was compiled with one of its own, is wayline's
  memory (``wayline.langgraph.store.WaylineStore``) under the run's tenant: a node's
  ``store`` and ``runtime.store`` read and write the items the server's ``/store`` shows,
  each write fenced like a checkpoint;
- an interrupt parks the run (status ``interrupted``, lease released, no worker held)
  with wayline's interrupt records, so a decision goes through ``Wayline.resume``: the
  actor, the approvers (``approvers={node: roles}``), the proposal's digest, the audit
  log; the next claim resumes the graph with ``Command(resume={interrupt id: decision})``;
- a node error is reported on the run (``failed``, with why) for the worker's retries and
  dead letter; durability (``sync``/``async``/``exit``) is passed to LangGraph as it is.

Every checkpoint's metadata names the worker and token that wrote it (``wayline_owner``,
``wayline_token``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.pregel import Pregel
from langgraph.runtime import Runtime
from langgraph.types import Command

from wayline.codec import default_codec
from wayline.errors import CodecError, ConfigError, LeaseLost, RunParkedError
from wayline.graph import probe
from wayline.graph.identity import check_identity, fingerprint_of, shape_json
from wayline.graph.interrupts import Asked, ask
from wayline.graph.types import Interrupt
from wayline.langgraph.emitting import emitter_for
from wayline.langgraph.fence import FENCE_KEY, QUEUED_KEY, RunFence
from wayline.langgraph.identity import lg_shape
from wayline.langgraph.probe_callbacks import ProbeCallbacks
from wayline.langgraph.saver import WaylineSaver
from wayline.langgraph.store import WaylineStore
from wayline.store.base import Store
from wayline.store.records import CommitBatch, RunRecord, RunStatus, RunUpdate
from wayline.worker.engine import EngineKind, Lease

__all__ = ["LangGraphEngine", "graph_version"]

log = logging.getLogger("wayline.langgraph")


class LangGraphEngine:
    """A LangGraph graph a worker serves. ``name`` defaults to the graph's name, ``version``
    to a digest of its nodes and edges; its ``fingerprint`` is its whole structure (nodes,
    edges, channels with their reducers: ``wayline.langgraph.identity``), recorded on each
    run, so a worker with another shape of the graph does not take its runs. ``approvers``:
    per node, the actor ids or roles who may answer its interrupts (an approval, decided
    through ``Wayline.resume`` with an actor and the proposal's digest); other interrupts
    may be answered by anyone of the run's tenant. ``memory``: the long-term store its
    nodes get (a ``WaylineStore``, whose index and TTL apply; default: one without an
    index), bound to each run's tenant; a graph compiled with a store of its own keeps it."""

    kind: EngineKind = "langgraph"
    schema_version = ""

    def __init__(
        self,
        graph: Any,
        *,
        name: str | None = None,
        version: str | None = None,
        store: Store | None = None,
        approvers: Mapping[str, Sequence[str]] | None = None,
        saver: WaylineSaver | None = None,
        memory: WaylineStore | None = None,
    ) -> None:
        if not isinstance(graph, Pregel):
            raise ConfigError(
                f"LangGraphEngine runs a compiled LangGraph graph (CompiledStateGraph or "
                f"@entrypoint), not a {type(graph).__name__}: call .compile() first"
            )
        self.graph = graph
        self.name = name or graph.name or "LangGraph"
        drawn = _identity(graph)
        self.version = version or drawn[0]
        self.shape: dict[str, Any] = drawn[1]
        self.fingerprint = fingerprint_of(self.shape)
        self.shape_json: str | None = shape_json(self.shape)
        self.approvers = {k: tuple(v) for k, v in (approvers or {}).items()}
        self.store = store
        self.memory = memory if memory is not None else WaylineStore()
        self.saver = saver if saver is not None else (WaylineSaver(store) if store else None)
        self._bound: Any = None if self.saver is None else graph.copy({"checkpointer": self.saver})

    def bind(self, store: Store) -> LangGraphEngine:
        if store is self.store:
            return self
        return type(self)(
            self.graph,
            name=self.name,
            version=self.version,
            store=store,
            approvers=self.approvers,
            memory=self.memory,
        )

    @property
    def memory_store(self) -> Any:
        """The long-term store the server's ``/store`` routes use (``wayline.server.
        store_routes``): this engine's, whose index a search of them ranks with."""
        return self.memory.durable

    @property
    def serde(self) -> Any:
        return _SERDE if self.saver is None else self.saver.serde

    def encode_input(self, value: Any, breakpoints: Any = None) -> bytes:
        """The queued input in wayline's inbox layout, its values encoded by LangGraph's
        serializer (messages and other LangChain types come back as they went in)."""
        if isinstance(value, Command):
            goto = value.goto if isinstance(value.goto, list | tuple) else [value.goto]
            items: list[Any] = ["command", value.resume, value.update, [g for g in goto if g]]
        else:
            items = ["input", value]
        options = _options(breakpoints)
        if options:
            items.append(options)
        kind, data = self.serde.dumps_typed(items)
        if kind != "msgpack":
            raise CodecError(f"cannot queue this input for a LangGraph run ({kind} encoding)")
        return bytes(data)

    def decode_input(self, data: bytes) -> tuple[Any, dict[str, Any]]:
        """(the input or a Command, the options queued with it)."""
        kind, *rest = self.serde.loads_typed(("msgpack", data))
        options: dict[str, Any] = {}
        if kind == "command":
            resume, update, goto = rest[:3]
            options = rest[3] if len(rest) > 3 else {}
            cmd = Command(resume=resume, update=update, goto=tuple(goto or ()))
            return cmd, dict(options or {})
        options = rest[1] if len(rest) > 1 else {}
        return rest[0], dict(options or {})

    def queued_options(self, run: RunRecord) -> dict[str, Any]:
        """What the run's current invocation was queued with: its inbox's options, or, once
        a checkpoint took the inbox, the ones that checkpoint keeps (``QUEUED_KEY``)."""
        if run.inbox is not None:
            return self.decode_input(run.inbox)[1]
        if self.saver is None:
            return {}
        conf = {"thread_id": run.run_id, "tenant": run.tenant_id}
        found = self.saver.get_tuple({"configurable": conf})
        packed = None if found is None else (found.metadata or {}).get(QUEUED_KEY)
        return self.unpack_options(packed) if isinstance(packed, str) else {}

    def queued_webhook(self, run: RunRecord) -> str | None:
        """The ``webhook=`` of the run's current invocation (``wayline.worker.notify``)."""
        hook = self.queued_options(run).get("webhook")
        return hook if isinstance(hook, str) and hook else None

    def pack_options(self, options: Mapping[str, Any]) -> str | None:
        """``options`` as checkpoint metadata holds them: LangGraph's serializer (the
        inbox's own encoding), as text, since metadata keeps plain values only."""
        if not options:
            return None
        kind, data = self.serde.dumps_typed(dict(options))
        return f"{kind}:{base64.b64encode(bytes(data)).decode()}"

    def unpack_options(self, packed: str) -> dict[str, Any]:
        kind, _, data = packed.partition(":")
        found = self.serde.loads_typed((kind, base64.b64decode(data)))
        return dict(found) if isinstance(found, dict) else {}

    def labels(self) -> dict[str, str]:
        return {}

    def open(self, run: RunRecord, lease: Lease) -> LangGraphExecution:
        if self._bound is None or self.store is None:
            raise ConfigError("a LangGraphEngine runs on a store: bind(store) first")
        if run.durability not in ("sync", "async", "exit"):
            raise ConfigError(f"durability {run.durability!r} of run {run.run_id!r} is unknown")
        check_identity(run, self)  # a run of another shape of the graph: refused, untouched
        return LangGraphExecution(self, run, lease)


class LangGraphExecution:
    """One claimed run of a LangGraph graph: LangGraph's loop until it ends or pauses."""

    def __init__(self, engine: LangGraphEngine, run: RunRecord, lease: Lease) -> None:
        self.engine, self.record, self.lease = engine, run, lease
        self.loaded = False
        self.closed = False
        """Ended or paused: its lease given up (a heartbeat that finds it gone: no loss)."""
        self.cancelled = False
        self.steps = 0
        self.final_step: int | None = None
        """The step of its ``done`` report (``Execution.final_step``)."""
        self.fence = RunFence(
            lease.token,
            lease.owner,
            take_inbox=run.inbox is not None,
            graph=run.graph_name,
            recovery=run.taken_over,
        )
        self.config: dict[str, Any] = {
            "configurable": {
                "thread_id": run.run_id,
                "tenant": run.tenant_id,
                FENCE_KEY: self.fence,
            },
            "metadata": {"wayline_owner": lease.owner, "wayline_token": lease.token},
        }
        if engine.graph.store is None and engine.store is not None:  # a graph's own store wins
            store = engine.memory.for_run(engine.store, run.tenant_id, run.run_id, lease.token)
            self.config["configurable"][CONFIG_KEY_RUNTIME] = Runtime(store=store)
        if probe.installed():  # a harness counting what runs (wayline killtest)
            self.config["callbacks"] = [ProbeCallbacks(run.tenant_id, run.run_id)]

    @property
    def store(self) -> Store:
        assert self.engine.store is not None
        return self.engine.store

    def cancel(self) -> None:
        self.cancelled = True

    def run(self) -> str:
        run, token = self.record, self.lease.token
        try:
            return self._run()
        except RunParkedError as exc:  # an effect's outcome is unknown: for an operator
            self._report("parked", error=f"effect {exc.key} outcome unknown")
            raise
        except BaseException as exc:
            if isinstance(exc, Exception) and self.loaded:
                self._report("failed", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.closed = True  # set first: a heartbeat finding the lease given up now
            self.store.release(run.tenant_id, run.run_id, token)  # knows it is no loss

    def _run(self) -> str:
        engine, run = self.engine, self.record
        given, options = (None, {}) if run.inbox is None else engine.decode_input(run.inbox)
        if run.inbox is None:  # taken over (or resumed) after a checkpoint took the inbox
            options = engine.queued_options(run)
        self.fence.queued = engine.pack_options(options)
        before = self.store.load_interrupts(run.tenant_id, run.run_id, run.step + 1)
        answers = {
            i.interrupt_id: default_codec.loads(i.resume) for i in before if i.resume is not None
        }
        if given is None and answers:  # a decision recorded through Wayline.resume
            given = Command(resume=answers)
        queued = options.get("run_config") or {}
        self.config = _run_config(self.config, queued.get("config"))
        if queued.get("context") is not None:
            options = {**options, "context": queued["context"]}
        self.loaded = True
        stopped = asyncio.run(self._stream(given, options))
        if stopped and self.cancelled:
            return self._report("cancelled", error="cancelled by request")
        if stopped:  # a graceful stop or a lost lease: the next holder continues
            return "running"
        return self._settle(before)

    async def _stream(self, given: Any, options: dict[str, Any]) -> bool:
        """LangGraph's loop until it ends or pauses (True: stopped at ``lease.stop``).
        Always ``astream``: it runs async nodes and tools (a template's ``async def``
        nodes) and sync ones alike, the sync ones in threads, as LangGraph's server does."""
        app = self.engine._bound
        emitter = emitter_for(self.store, self.record, self.lease.token, options)
        modes = ["updates", *(emitter.modes if emitter is not None else ())]
        # what subgraphs emit, recorded too when the run's stream asked (stream_subgraphs):
        # LangGraph streams a subgraph's messages otherwise as the node's output, whole
        nested = emitter is not None and bool(options.get("stream_subgraphs"))
        stream = app.astream(
            given,
            self.config,
            stream_mode=modes,
            durability=self.record.durability,
            interrupt_before=options.get("interrupt_before"),
            interrupt_after=options.get("interrupt_after"),
            context=_context(app, options.get("context")),
            subgraphs=nested,
        )
        try:
            async for part in stream:
                ns, mode, chunk = part if nested else ((), *part)
                if mode != "updates":
                    assert emitter is not None
                    emitter.chunk(mode, chunk, tuple(ns))
                    continue
                if ns:  # a subgraph's step: the run's own steps are the root's
                    continue
                self.steps += 1
                if emitter is not None:
                    emitter.updated()
                if self.lease.stop.is_set():
                    return True
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()
            if emitter is not None:
                with contextlib.suppress(Exception, LeaseLost):  # the run's error says
                    emitter.close()
        return False

    def _settle(self, before: Sequence[Any]) -> str:
        """Report how the run ended: done, or waiting with its questions recorded."""
        state = self.engine._bound.get_state(self.config)
        step = int((state.metadata or {}).get("step", self.record.step))
        if not state.next:
            self.final_step = step
            return self._report("done", step=step)
        asked = []
        for task in state.tasks:
            if not task.interrupts:
                continue
            approvers = self.engine.approvers.get(task.name)
            found = tuple(
                (idx, Interrupt(_plain(i.value), i.id, approvers))
                for idx, i in enumerate(task.interrupts)
            )
            asked.append(Asked(step + 1, task.id, task.name, found))
        records, audit, _ = ask(
            self.record.tenant_id, self.record.run_id, asked, before, default_codec
        )
        return self._report(
            "interrupted",
            step=step,
            next_nodes=tuple(state.next),
            interrupts=records,
            audit=audit,
        )

    def _report(
        self,
        status: RunStatus,
        *,
        step: int | None = None,
        next_nodes: tuple[str, ...] = (),
        error: str | None = None,
        interrupts: Sequence[Any] = (),
        audit: Sequence[Any] = (),
    ) -> str:
        """The run's status, fenced: the last write of this execution."""
        if step is None:
            current = self.store.get_run(self.record.tenant_id, self.record.run_id)
            step = self.record.step if current is None else current.step
        batch = CommitBatch(
            run=RunUpdate(status, step, next_nodes, error=error),
            interrupts=list(interrupts),
            audit=list(audit),
            clear_pending_through=step,
            take_inbox=self.fence.write(None).take_inbox,
        )
        commit = self.lease.committer or self.store.commit  # the worker's: with notifications
        commit(self.record.tenant_id, self.record.run_id, self.lease.token, batch)
        return status


_IDENTITIES: weakref.WeakKeyDictionary[Any, tuple[str, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
"""(default version, shape) per compiled graph: drawn once, not at every ``Wayline.start``
(drawing a small graph twice costs about a millisecond)."""


def _identity(graph: Any) -> tuple[str, dict[str, Any]]:
    try:
        return _IDENTITIES[graph]
    except (KeyError, TypeError):
        pass
    found = (graph_version(graph), lg_shape(graph))
    with contextlib.suppress(TypeError):  # a graph that cannot be weakly referenced
        _IDENTITIES[graph] = found
    return found


def graph_version(graph: Any) -> str:
    """A fingerprint of a LangGraph graph's structure: its nodes and edges (not its code)."""
    try:
        drawn = graph.get_graph()
        shape: Any = {
            "nodes": sorted(drawn.nodes),
            "edges": sorted((e.source, e.target, bool(e.conditional)) for e in drawn.edges),
        }
    except Exception:  # a graph that cannot be drawn: its node names
        shape = {"nodes": sorted(graph.nodes)}
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
    return f"lg-{digest[:12]}"


def _run_config(own: dict[str, Any], given: Any) -> dict[str, Any]:
    """The run's LangGraph config with the one queued with its input (an assistant's
    config, the run's over it: ``wayline serve``): its ``configurable`` keys, tags,
    metadata and recursion limit reach the graph; the run's own ids and fence win."""
    if not isinstance(given, dict) or not given:
        return own
    out = {**given, **own}
    out["configurable"] = {**(given.get("configurable") or {}), **own["configurable"]}
    out["metadata"] = {**(given.get("metadata") or {}), **own["metadata"]}
    return out


def _context(graph: Any, given: Any) -> Any:
    """The run's ``Runtime.context``: what the run was given, as the graph's context schema
    (its defaults when nothing was given, as LangGraph's server builds it), else None."""
    schema = getattr(graph, "context_schema", None)
    if schema is None:
        return given
    given = dict(given or {})
    if isinstance(schema, type) and not issubclass(schema, dict) and hasattr(schema, "__init__"):
        try:
            return schema(**given)
        except TypeError:
            return given
    return given


def _options(breakpoints: Any) -> dict[str, Any]:
    if breakpoints is None or breakpoints == (None, None):
        return {}
    before, after = breakpoints
    return {"interrupt_before": _names(before), "interrupt_after": _names(after)}


def _names(given: Any) -> Any:
    if given is None or isinstance(given, str):
        return given
    return [str(n) for n in given]


def _plain(value: Any) -> Any:
    """An interrupt's question as wayline's codec stores it (``Wayline.pending``): as it
    is when it can be, else as JSON-ready data."""
    try:
        default_codec.dumps(value)
        return value
    except CodecError:
        return json.loads(json.dumps(value, default=_jsonable))


def _jsonable(value: Any) -> Any:
    for method in ("model_dump", "dict", "to_json"):
        fn = getattr(value, method, None)
        if callable(fn):
            with contextlib.suppress(Exception):
                return fn()
    return repr(value)


_SERDE = JsonPlusSerializer(pickle_fallback=False, allowed_json_modules=None)
"""Encodes a run's queued input before any store is bound (``Wayline.start``): the
saver's own settings, so the worker's saver reads it back."""
