"""CompiledGraph: invoke, stream and inspect runs. The sync and async drivers differ only
in how they call nodes; everything else is the shared ``RunLoop``."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import datetime as dt
import inspect
import threading
import time
import typing
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from wayline.errors import (
    ConfigError,
    EffectOutcomeUnknown,
    GraphInterrupt,
    ParentCommand,
    ReplayDivergenceError,
    RunNotFoundError,
    WaylineError,
)
from wayline.graph import travel
from wayline.graph.algo import with_pending
from wayline.graph.channels import Barrier, Channel
from wayline.graph.checkpoint import (
    DEFAULT_BLOB_THRESHOLD,
    BlobCache,
    decode_results,
    reconstruct,
    state_digest,
)
from wayline.graph.context import coerce_context, current_scope, reset_scope, set_scope
from wayline.graph.driving import (
    aexecute_live,
    breakpoint_sets,
    configs,
    execute_live,
    stops_after,
    stops_before,
    task_input,
)
from wayline.graph.identity import fingerprint_of, shape_json, shape_of
from wayline.graph.jsonschema import JsonSchemas
from wayline.graph.loop import ExecTask, RunLoop, TaskOutcome, default_owner
from wayline.graph.snapshot_source import step_source
from wayline.graph.streaming import (
    PAUSED,
    RESUMED,
    EventBus,
    Formatter,
    checkpoint_event,
    parse_modes,
    task_result,
    task_start,
)
from wayline.graph.subgraph import from_child, run_child, with_child_states
from wayline.graph.types import Command, Interrupt, PregelTask, Send, StateSnapshot
from wayline.graph.updates import StateUpdates, history
from wayline.ids import RunRef, derive_id
from wayline.store.base import Store
from wayline.store.records import AuditRecord, RunRecord, check_durability
from wayline.store.writer import Committer

if TYPE_CHECKING:
    from wayline.graph.builder import StateGraph

__all__ = ["CompiledGraph", "Verification"]

DEFAULT_STEP_LIMIT = 10_000
"""LangGraph 1.2 defaults ``recursion_limit`` to 10,007; wayline rounds it."""
DEFAULT_TENANT = "default"


@dataclasses.dataclass(frozen=True, slots=True)
class Verification:
    """The result of ``verify``: the committed digest against the reconstructed one."""

    run_id: str
    step: int
    expected: str
    actual: str
    snapshot_step: int | None
    folds: int
    rows_read: int

    @property
    def ok(self) -> bool:
        return self.expected == self.actual


class CompiledGraph(StateUpdates, JsonSchemas):
    """A validated graph bound to a store. Thread-safe: one instance serves many runs."""

    memory_store: Any = None
    """LangGraph's long-term memory store (``compile(store=...)``; ``wayline.memory``)."""

    def __init__(
        self,
        *,
        builder: StateGraph,
        store: Store,
        snapshot_every: int,
        name: str,
        version: str,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        verify_sample: float = 0.0,
        max_lag_steps: int = 8,
        max_lag_ms: float = 100.0,
        interrupt_before: tuple[str, ...] = (),
        interrupt_after: tuple[str, ...] = (),
    ) -> None:
        self.builder = builder
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.context_schema = builder.context_schema
        self.config: dict[str, Any] = {}
        self.store = store
        self.codec = builder.codec
        self.schema = builder.schema
        self.snapshot_every = snapshot_every
        self.blob_threshold = blob_threshold
        self.verify_sample = verify_sample
        self.max_lag_steps = max_lag_steps
        self.max_lag_ms = max_lag_ms
        self.name = name
        self.version = version
        self.schema_version = builder.schema_version
        self.migrations = dict(builder.migrations)
        self.nodes = builder.final_nodes()
        self.branches = {k: tuple(v) for k, v in builder.branches.items()}
        edges: dict[str, list[str]] = {}
        for src, dst in sorted(builder.edges):
            edges.setdefault(src, []).append(dst)
        self.static_edges = {k: tuple(v) for k, v in edges.items()}
        self.barriers: dict[str, Barrier] = {}
        joins: dict[str, list[str]] = {}
        for srcs, dst in sorted(builder.waiting_edges):
            key = f"__join__:{'+'.join(srcs)}:{dst}"
            self.barriers[key] = Barrier(key, srcs)
            for src in srcs:
                joins.setdefault(src, []).append(key)
        self.joins_from = {k: tuple(v) for k, v in joins.items()}
        self.requires_thread_id = True
        self.given_name: str | None = None
        self.persistent_child = False
        """``compile(checkpointer=True)``: as a subgraph, it keeps one thread per parent
        node, and each call continues it (LangGraph's persistent subgraph)."""
        """The name `compile(name=...)` was given (None: LangGraph would call it "LangGraph")."""
        self.continue_without: frozenset[str] = frozenset()
        """Erased data classes a run of this graph may continue without (``compile``)."""
        """A graph compiled with a checkpointer needs a thread id to invoke (LangGraph's
        rule); one compiled without (a private in-memory store) starts a fresh run."""
        if not self.codec.is_registered(Send):
            self.codec.register(Send, "wayline.Send")
        self.shape = shape_of(self)
        """What a run of this graph relies on (docs/operations.md, "Graph names and
        fingerprints"); recorded on a run when it starts."""
        self.fingerprint = fingerprint_of(self.shape)
        self.shape_json = shape_json(self.shape)
        if not self.codec.is_registered(Command):  # a Send's argument may be a Command
            self.codec.register(Command, "wayline.Command")

    @property
    def checkpointer(self) -> Store:
        return self.store

    def with_store(self, store: Store) -> CompiledGraph:
        """The same graph bound to another store (a worker serves graphs on its own)."""
        if store is self.store:
            return self
        bound = copy.copy(self)
        bound.store = store
        return bound

    @property
    def input_keys(self) -> tuple[str, ...]:
        """The keys an input may set (the input schema's, or the state's)."""
        return self.builder.input_keys or tuple(self.builder.schema.channels)

    @property
    def output_keys(self) -> tuple[str, ...]:
        return self.builder.output_keys or tuple(self.builder.schema.channels)

    def output_of(self, values: Mapping[str, Any]) -> Any:
        """What ``invoke`` returns for a state: the output schema's keys (a single-value
        state: the value)."""
        if self.schema.kind == "root":
            return self.schema.present(dict(values))
        if self.builder.output_keys is None:
            return self.schema.visible(dict(values))
        return {k: v for k, v in values.items() if k in self.builder.output_keys}

    def node_input_keys(self, node: str) -> tuple[str, ...]:
        spec = self.nodes[node]
        if spec.input_schema is None:
            return tuple(self.schema.channels)
        return tuple(typing.get_type_hints(spec.input_schema))

    def with_config(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> CompiledGraph:
        """The same graph with ``config`` merged into every call's config (as LangGraph)."""
        bound = copy.copy(self)
        merged = {**self.config, **(config or {}), **kwargs}
        if "configurable" in self.config or "configurable" in (config or {}):
            merged["configurable"] = {
                **self.config.get("configurable", {}),
                **(config or {}).get("configurable", {}),
            }
        bound.config = merged
        return bound

    def get_graph(self, config: Any = None, *, xray: int | bool = False) -> Any:
        """The graph's nodes and edges, drawable with ``draw_mermaid()`` / ``draw_ascii()``."""
        from wayline.graph.drawing import DrawableGraph

        return DrawableGraph.of(self)

    def new_channels(self) -> dict[str, Channel]:
        channels = self.schema.new_channels()
        channels.update({k: b.fresh() for k, b in self.barriers.items()})
        return channels

    # -- running ----------------------------------------------------------------------

    def invoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        durability: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Run until the graph finishes or interrupts; return the state (its output keys).

        An interrupted run's result carries ``"__interrupt__"``: the pending questions.
        Called from inside a running node without a ``thread_id``, the graph runs as a
        subgraph of that node (checkpointed under its namespace, see ``subgraph``).
        """
        if _inside_task(config):
            return typing.cast("dict[str, Any]", run_child(self, input, context=context))
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        while True:
            loop = self.make_loop(
                config, durability, context=context, control=kwargs.get("control")
            )
            loop.step_events = False  # only the result is read
            for _ in self.run_loop(loop, input, breakpoints=breaks):
                pass
            if loop.sleeping_until is None:
                return self._result(loop)
            time.sleep(max(0.0, loop.sleeping_until - time.time()))  # a durable timer:
            input, config = None, _same_run(config, loop)  # committed: continue when due

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        durability: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Stream a run. ``stream_mode`` defaults to ``"updates"``, as LangGraph's; a list of
        modes yields ``(mode, chunk)``; ``subgraphs=True`` prefixes the namespace."""
        modes, single = parse_modes(stream_mode or "updates")
        loop = self.make_loop(config, durability, context=context, control=kwargs.get("control"))
        fmt = self._streaming(loop, modes, single, subgraphs)
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        for mode, chunk in self.run_loop(loop, input, breakpoints=breaks):
            yield from fmt(mode, chunk)
            if mode == "values" and "__interrupt__" not in chunk and fmt.wants_checkpoints:
                yield from fmt("checkpoints_src", checkpoint_event(loop, chunk))
        if loop.sleeping_until is not None:  # a durable timer: continue when it is due
            time.sleep(max(0.0, loop.sleeping_until - time.time()))
            yield from self.stream(
                None,
                _same_run(config, loop),
                context=context,
                stream_mode=stream_mode,
                subgraphs=subgraphs,
                durability=durability,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
            )
            return
        if (loop.raised or loop.halted) and loop.pending:  # as LangGraph: finished tasks' writes
            fmt.wrote = True
            yield from fmt("values", with_pending(loop.channels, loop.pending.values()))

    async def ainvoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        durability: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if _inside_task(config):  # a subgraph of the running node, driven on a thread
            child = await asyncio.to_thread(run_child, self, input, context=context)
            return typing.cast("dict[str, Any]", child)
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        while True:
            loop = self.make_loop(
                config, durability, context=context, control=kwargs.get("control")
            )
            loop.step_events = False  # only the result is read
            async for _ in self._adrive(loop, input, breaks):
                pass
            if loop.sleeping_until is None:
                return self._result(loop)
            await asyncio.sleep(max(0.0, loop.sleeping_until - time.time()))
            input, config = None, _same_run(config, loop)

    async def astream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        durability: str | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        modes, single = parse_modes(stream_mode or "updates")
        loop = self.make_loop(config, durability, context=context, control=kwargs.get("control"))
        fmt = self._streaming(loop, modes, single, subgraphs)
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        async for mode, chunk in self._adrive(loop, input, breaks):
            for item in fmt(mode, chunk):
                yield item
            if mode == "values" and "__interrupt__" not in chunk and fmt.wants_checkpoints:
                for item in fmt("checkpoints_src", checkpoint_event(loop, chunk)):
                    yield item

    def batch(
        self,
        inputs: Sequence[Any],
        config: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``invoke`` on each input (one config, or one per input), as LangGraph's batch."""
        per_input = configs(config, len(inputs))
        out: list[Any] = []
        for item, cfg in zip(inputs, per_input, strict=True):
            try:
                out.append(self.invoke(item, cfg, **kwargs))
            except Exception as exc:
                if not return_exceptions:
                    raise
                out.append(exc)
        return out

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        per_input = configs(config, len(inputs))
        calls = [self.ainvoke(i, c, **kwargs) for i, c in zip(inputs, per_input, strict=True)]
        return list(await asyncio.gather(*calls, return_exceptions=return_exceptions))

    def _streaming(
        self, loop: RunLoop, modes: set[str], single: bool, subgraphs: bool
    ) -> Formatter:
        fmt = Formatter(modes, single, subgraphs, self.schema.visible, lambda: loop.step + 1)
        if modes - {"values", "updates"} or subgraphs:
            loop.invocation.emit = EventBus(modes, subgraphs)
            if "messages" in modes:
                try:
                    from wayline.interop.lc_stream import ChatStream
                except ImportError:
                    raise WaylineError(
                        'stream_mode="messages" streams langchain-core chat models: '
                        "pip install 'wayline[langchain]'"
                    ) from None

                loop.invocation.chat_callbacks = ChatStream(loop.invocation.emit)
        return fmt

    def breakpoints(
        self, before: Sequence[str] | str | None, after: Sequence[str] | str | None
    ) -> tuple[frozenset[str], frozenset[str]]:
        """The nodes to pause before and after for ``interrupt_before``/``interrupt_after``
        as given (``"*"``: every node; None: the compiled-in ones); ``run_loop`` takes it."""
        return breakpoint_sets(
            self.nodes, before, after, self.interrupt_before, self.interrupt_after
        )

    def _result(self, loop: RunLoop) -> dict[str, Any]:
        """The state's output keys (typed as the dict it is for every schema but a
        single-value one, whose value it is)."""
        out = self.output_of(with_pending(loop.channels, loop.pending.values()))
        if loop.raised and isinstance(out, dict):
            out["__interrupt__"] = list(loop.raised)
        return typing.cast("dict[str, Any]", out)

    def make_loop(
        self,
        config: Mapping[str, Any] | None,
        durability: str | None,
        *,
        context: Any = None,
        control: Any = None,
    ) -> RunLoop:
        """A loop for one invocation (``config`` merged over ``with_config``'s); a dict
        ``context`` becomes the context schema (a dataclass or pydantic model), as in
        LangGraph, so a wrong one fails here, before anything is written."""
        context = coerce_context(self.context_schema, context)
        merged = dict(self.config)
        merged.update(_checked_config(config))
        if "configurable" in self.config and config and "configurable" in config:
            merged["configurable"] = {**self.config["configurable"], **config["configurable"]}
        loop = self._loop(merged, durability or merged.get("durability") or "sync")
        loop.invocation.context = context
        loop.invocation.control = control
        return loop

    def _loop(self, config: Mapping[str, Any] | None, durability: str) -> RunLoop:
        config = dict(config or {})
        tenant, run_id = _ids(config, create=not self.requires_thread_id)
        config.setdefault("configurable", {})
        config["configurable"] = {**config["configurable"], "thread_id": run_id}
        check_durability(durability)
        owner, token = default_owner(), None
        fork = travel.open_replay(self, config, tenant, run_id, owner)
        if fork is not None:  # a past checkpoint (or a fork_id): run a fork of it
            run_id, token = fork
            config["configurable"] = {**config["configurable"], "thread_id": run_id}
        return self.open_loop(
            RunRef(tenant, run_id),
            durability=durability,
            config=config,
            step_limit=int(config.get("recursion_limit", DEFAULT_STEP_LIMIT)),
            owner=owner,
            token=token,
        )

    def open_loop(
        self,
        ref: RunRef,
        *,
        durability: str,
        config: Mapping[str, Any] | None = None,
        step_limit: int = DEFAULT_STEP_LIMIT,
        owner: str | None = None,
        lease_seconds: float = 300.0,
        token: int | None = None,
        stop: threading.Event | None = None,
        claimed_run: RunRecord | None = None,
        committer: Committer | None = None,
    ) -> RunLoop:
        """The one way to open a run for execution, in process (``invoke``) or for a worker
        that claimed it (``token``, the row its claim returned, and the worker's group
        committer): its nodes see ``config`` (default: the run's own)."""
        return RunLoop(
            self,
            ref,
            durability=durability,
            step_limit=step_limit,
            config=config if config is not None else ref.config(),
            owner=owner,
            lease_seconds=lease_seconds,
            token=token,
            stop=stop,
            claimed_run=claimed_run,
            committer=committer,
        )

    def run_loop(
        self,
        loop: RunLoop,
        input: Any,
        *,
        breakpoints: tuple[frozenset[str], frozenset[str]] | None = None,
    ) -> Iterator[tuple[str, Any]]:
        """Drive ``loop`` to its end, yielding (stream mode, chunk); workers call this."""
        error: BaseException | None = None
        pool: ThreadPoolExecutor | None = None
        before, after = breakpoints or (
            frozenset(self.interrupt_before),
            frozenset(self.interrupt_after),
        )
        resuming = True  # no new input (a worker's queued input counts as input)
        bus = (
            loop.invocation.emit
            if isinstance(loop.invocation.emit, EventBus) and not loop.invocation.namespace
            else None
        )
        try:
            for event in loop.begin(input):
                resuming = resuming and event[0] != "values"
                yield event
            if resuming and loop.step >= 0:
                yield (RESUMED, loop.values())
            while (tasks := loop.next_step()) is not None:
                if stops_before(loop, tasks, before, resuming):
                    loop.pause()
                    yield PAUSED
                    break
                if isinstance(loop.invocation.emit, EventBus) and loop.invocation.emit.wants_tasks:
                    for t in tasks:
                        yield ("tasks", task_start(t, task_input(loop, t)))
                if bus is not None:
                    pool = pool or ThreadPoolExecutor(8, thread_name_prefix="wayline-node")
                    outcomes = yield from execute_live(loop, tasks, pool, bus, _run_task)
                else:
                    if len(tasks) > 1 and pool is None:
                        pool = ThreadPoolExecutor(8, thread_name_prefix="wayline-node")
                    outcomes = self._execute(loop, tasks, pool)
                if isinstance(loop.invocation.emit, EventBus) and loop.invocation.emit.wants_tasks:
                    for o in outcomes:
                        yield ("tasks", task_result(o))
                yield from loop.after_step(outcomes)
                if stops_after(loop, outcomes, after):
                    loop.pause()
                    yield PAUSED
                    break
            loop.close(None)
            self._sample_verify(loop)
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
            loop.close(error)

    async def _adrive(
        self,
        loop: RunLoop,
        input: Any,
        breakpoints: tuple[frozenset[str], frozenset[str]] | None = None,
    ) -> AsyncIterator[tuple[str, Any]]:
        error: BaseException | None = None
        before, after = breakpoints or (frozenset(), frozenset())
        resuming = True
        bus = loop.invocation.emit if isinstance(loop.invocation.emit, EventBus) else None
        try:
            for event in loop.begin(input):
                resuming = resuming and event[0] != "values"
                yield event
            if resuming and loop.step >= 0:
                yield (RESUMED, loop.values())
            while (tasks := loop.next_step()) is not None:
                if stops_before(loop, tasks, before, resuming):
                    loop.pause()
                    yield PAUSED
                    break
                if bus is not None and bus.wants_tasks:
                    for t in tasks:
                        yield ("tasks", task_start(t, task_input(loop, t)))
                if bus is None:
                    outcomes = await self._aexecute(loop, tasks)
                else:
                    running = asyncio.ensure_future(self._aexecute(loop, tasks))
                    async for event in aexecute_live(bus, running):
                        yield event
                    outcomes = running.result()
                    if bus.wants_tasks:
                        for o in outcomes:
                            yield ("tasks", task_result(o))
                for event in loop.after_step(outcomes):
                    yield event
                if stops_after(loop, outcomes, after):
                    loop.pause()
                    yield PAUSED
                    break
            loop.close(None)
            self._sample_verify(loop)
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            loop.close(error)

    def _execute(
        self, loop: RunLoop, tasks: list[ExecTask], pool: ThreadPoolExecutor | None
    ) -> list[TaskOutcome]:
        chat = loop.invocation.chat_callbacks  # a worker recording ``messages``
        if len(tasks) <= 1 or pool is None:
            outcomes = [_run_task(loop, t) for t in tasks]
            for o in outcomes:
                loop.task_done(o)
                if chat is not None:
                    chat.node_output(o)
            return outcomes
        futures = [pool.submit(contextvars.copy_context().run, _run_task, loop, t) for t in tasks]
        outcomes = []
        for future in as_completed(futures):
            outcome = future.result()
            loop.task_done(outcome)
            if chat is not None:
                chat.node_output(outcome)
            outcomes.append(outcome)
        return outcomes

    async def _aexecute(self, loop: RunLoop, tasks: list[ExecTask]) -> list[TaskOutcome]:
        futures = [asyncio.ensure_future(_arun_task(loop, t)) for t in tasks]
        outcomes = []
        for next_done in asyncio.as_completed(futures):
            outcome = await next_done
            loop.task_done(outcome)
            outcomes.append(outcome)
        return outcomes

    # -- inspecting -------------------------------------------------------------------

    def get_state(self, config: Mapping[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        """The state at the run's last committed step (or at ``configurable.step``); with
        ``subgraphs=True`` each task running a subgraph carries the subgraph's state."""
        snapshot = self._state(config)
        if not subgraphs:
            return snapshot
        return with_child_states(self, snapshot)

    def _state(self, config: Mapping[str, Any]) -> StateSnapshot:
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        cfg = RunRef(tenant, run_id).config()
        if run is None:
            return StateSnapshot({}, (), cfg, {}, None, None, ())
        at = travel.requested_step(config, tenant, run_id)
        at = run.step if at is None else min(at, run.step)
        rec = reconstruct(self.store, self.codec, self.new_channels(), tenant, run_id, at)
        interrupts: list[Interrupt] = []
        tasks = []
        latest = at == run.step
        pending = {}
        records = []
        if latest:
            resolve = BlobCache(self.store, tenant)
            pending = {
                p.task_id: decode_results(self.codec, p.payload, resolve)[0]
                for p in self.store.load_pending(tenant, run_id, at + 1)
            }
            records = self.store.load_interrupts(tenant, run_id, at + 1)
        for spec in rec.next_tasks:
            task_id = derive_id(tenant, run_id, at + 1, *spec.path)
            mine = tuple(
                Interrupt(
                    self.codec.loads(r.value),
                    r.interrupt_id,
                    r.approvers,
                    r.expires_at,
                    r.digest,
                    r.cls,
                )
                for r in records
                if r.task_id == task_id and r.resume is None
            )
            interrupts.extend(mine)
            done = pending.get(task_id)
            result = dict(w for w in done.writes if not w[0].startswith("__")) if done else None
            tasks.append(PregelTask(task_id, spec.name, spec.path, interrupts=mine, result=result))
        meta = {
            "step": at,
            "status": run.status if latest else "running",
            "graph": run.graph_name,
            "graph_version": run.graph_version,
            "snapshot_step": rec.snapshot_step,
            "replayed_steps": rec.folds,
            "rows_read": rec.rows_read,
            "source": step_source(self.store, tenant, run_id, at),
        }
        step_cfg = {"configurable": {**cfg["configurable"], **_at(tenant, run_id, at)}}
        parent = {"configurable": {**cfg["configurable"], **_at(tenant, run_id, at - 1)}}
        updated = dt.datetime.fromtimestamp(run.updated_at, dt.UTC).isoformat()
        return StateSnapshot(
            # as LangGraph: the values show what finished tasks of the unfinished step wrote,
            # and a task whose writes are pending (it finished) will not run again
            values=self.schema.present(with_pending(rec.channels, pending.values())),
            next=tuple(t.name for t in tasks if t.result is None),
            config=step_cfg,
            metadata=meta,
            created_at=updated if latest else None,
            parent_config=parent if at > 0 else None,
            tasks=tuple(tasks),
            interrupts=tuple(interrupts),
        )

    def get_state_history(
        self,
        config: Mapping[str, Any],
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """Snapshots from the newest committed step (or the one before ``before``) back
        to the input step; ``filter`` keeps those whose metadata holds its items."""
        return history(self, config, filter=filter, before=before, limit=limit)

    def verify(self, config: Mapping[str, Any]) -> Verification:
        """Reconstruct a finished run from the store and compare it with the digest its
        final commit recorded."""
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r}")
        if run.state_digest is None:
            raise WaylineError(
                f"run {run_id!r} is {run.status} and has no recorded final digest yet; "
                "verify it once it has finished"
            )
        rec = reconstruct(self.store, self.codec, self.new_channels(), tenant, run_id, run.step)
        actual = state_digest(self.codec, rec.channels)
        return Verification(
            run_id, run.step, run.state_digest, actual, rec.snapshot_step, rec.folds, rec.rows_read
        )

    def _sample_verify(self, loop: RunLoop) -> None:
        """Verify a deterministic sample of finished runs (``compile(verify_sample=...)``)."""
        if not loop.finished or self.verify_sample <= 0:
            return
        if int(derive_id(loop.tenant_id, loop.run_id)[:8], 16) >= self.verify_sample * 2**32:
            return
        result = self.verify(loop.ref.config())
        if not result.ok:
            error = ReplayDivergenceError(
                f"run {loop.run_id!r} reconstructs to state digest {result.actual[:16]} but "
                f"committed {result.expected[:16]}: a node may mutate its input state in place "
                "or a reducer may not be a pure function; the run's rows are intact. It is "
                f"failed and audited; fix the cause, then `wayline runs retry {loop.run_id}`"
            )
            # Terminal, not a retry: the same code reconstructs the same wrong state, and a
            # run left pending was claimed and verified again and again (920 times in 2 s).
            self.store.note_error(
                loop.tenant_id, loop.run_id, token=loop.token, error=str(error), status="failed"
            )
            self.store.append_audit(
                AuditRecord(
                    loop.tenant_id,
                    loop.run_id,
                    loop.owner,
                    "verify",
                    "diverged",
                    detail=f"step {result.step}: committed {result.expected[:16]}, "
                    f"reconstructed {result.actual[:16]}",
                )
            )
            raise error

    def state_digest(self, config: Mapping[str, Any]) -> str:
        """Digest of the reconstructed current state, comparable with the committed one."""
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            raise WaylineError(f"no run {run_id!r} for tenant {tenant!r}")
        rec = reconstruct(self.store, self.codec, self.new_channels(), tenant, run_id, run.step)
        return state_digest(self.codec, rec.channels)


def _same_run(config: Mapping[str, Any] | None, loop: RunLoop) -> dict[str, Any]:
    """``config`` naming the run ``loop`` ran (a started run's id may have been made)."""
    out = dict(config or {})
    out["configurable"] = {
        **dict(out.get("configurable") or {}),
        **loop.ref.config()["configurable"],
    }
    return out


def _run_task(loop: RunLoop, task: ExecTask) -> TaskOutcome:
    attempt = 0
    while True:
        attempt += 1
        token = set_scope(task.scope)
        try:
            fn, args = loop.node_call(task)
            output = fn(*args)
            if type(output) is not dict and inspect.isawaitable(output):  # an ABC check
                output = asyncio.run(_await(output))
            return loop.outcome(task, output)
        except (GraphInterrupt, EffectOutcomeUnknown) as exc:
            return loop.failed(task, exc)
        except ParentCommand as signal:
            return loop.outcome(task, from_child(signal))
        except Exception as exc:
            delay = loop.retry_delay(task, exc, attempt)
            if delay is None:
                return _handled(loop, task, exc)
        finally:
            reset_scope(token)
        time.sleep(delay)


def _handled(loop: RunLoop, task: ExecTask, exc: Exception) -> TaskOutcome:
    """A node that failed for good: its error handler's output, or the failure."""
    call = loop.handler_call(task, exc)
    if call is None:
        return loop.failed(task, exc)
    fn, args, is_async = call
    try:
        output = fn(*args)
        if is_async or (type(output) is not dict and inspect.isawaitable(output)):
            output = asyncio.run(_await(output))
        return loop.outcome(task, output)
    except (GraphInterrupt, EffectOutcomeUnknown, Exception) as again:
        return loop.failed(task, again)


async def _ahandled(loop: RunLoop, task: ExecTask, exc: Exception) -> TaskOutcome:
    call = loop.handler_call(task, exc)
    if call is None:
        return loop.failed(task, exc)
    fn, args, is_async = call
    try:
        output = await fn(*args) if is_async else await asyncio.to_thread(fn, *args)
        return loop.outcome(task, output)
    except (GraphInterrupt, EffectOutcomeUnknown, Exception) as again:
        return loop.failed(task, again)


async def _arun_task(loop: RunLoop, task: ExecTask) -> TaskOutcome:
    attempt = 0
    while True:
        attempt += 1
        token = set_scope(task.scope)
        try:
            fn, args = loop.node_call(task)
            if loop.graph.nodes[task.spec.name].is_async:
                output = await fn(*args)
            else:
                output = await asyncio.to_thread(fn, *args)
            return loop.outcome(task, output)
        except (GraphInterrupt, EffectOutcomeUnknown) as exc:
            return loop.failed(task, exc)
        except ParentCommand as signal:
            return loop.outcome(task, from_child(signal))
        except Exception as exc:
            delay = loop.retry_delay(task, exc, attempt)
            if delay is None:
                return await _ahandled(loop, task, exc)
        finally:
            reset_scope(token)
        await asyncio.sleep(delay)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _at(tenant: str, run_id: str, step: int) -> dict[str, Any]:
    """A step's address in a config: wayline's ``step`` and LangGraph's ``checkpoint_id``
    (``checkpoint_ns`` is "": a subgraph's checkpoints are a run of their own)."""
    cid = travel.checkpoint_id(tenant, run_id, step)
    return {"step": step, "checkpoint_ns": "", "checkpoint_id": cid}


def _checked_config(config: Any) -> Mapping[str, Any]:
    """A LangGraph-style config as given (None: empty), or ``ConfigError`` saying what is
    wrong with it, before anything is read or written."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(
            "config must be a dict like {'configurable': {'thread_id': 'my-thread'}}, "
            f"not {type(config).__name__}"
        )
    configurable = config.get("configurable")
    if configurable is not None and not isinstance(configurable, Mapping):
        raise ConfigError(
            "config['configurable'] must be a dict like {'thread_id': 'my-thread'}, "
            f"not {type(configurable).__name__}"
        )
    limit = config.get("recursion_limit")  # a number, as LangGraph reads it (1e4 too)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float)):
        raise ConfigError(f"config['recursion_limit'] must be a number, not {limit!r}")
    return config


def _inside_task(config: Mapping[str, Any] | None) -> bool:
    """Whether ``invoke`` was called from inside a running node without a thread of its
    own: then the graph runs as that node's subgraph."""
    thread = (_checked_config(config).get("configurable") or {}).get("thread_id")
    try:
        loop = current_scope().loop
    except WaylineError:
        return False
    # the node's own config passed on (as LangGraph's examples do) names the node's thread
    return loop is not None and (not thread or thread == loop.run_id)


def _ids(config: Mapping[str, Any] | None, *, create: bool) -> tuple[str, str]:
    """(tenant, run id) from a LangGraph-style config. A missing thread id is an error (as
    in LangGraph) unless ``create``: a run of a graph without a checkpointer of its own.
    Any value but None and "" is an id: thread 0 is the run "0"."""
    conf = _checked_config(config).get("configurable", {}) or {}
    tenant = str(conf.get("tenant", DEFAULT_TENANT))
    run_id = conf.get("thread_id", conf.get("run_id"))
    if run_id is None or run_id == "":
        if run_id == "" or not create:
            raise ConfigError(
                f"config needs {{'configurable': {{'thread_id': ...}}}} to find or start a run "
                f"(got {run_id!r}): a thread id names the run, so each invoke would otherwise "
                "start a new one"
            )
        run_id = uuid.uuid4().hex
    return tenant, str(run_id)
