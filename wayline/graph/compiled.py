"""CompiledGraph: invoke, stream and inspect runs. The sync and async drivers that step a
run's loop (``loop_drivers``) differ only in how they call nodes; everything else is the
shared ``RunLoop``."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import threading
import time
import typing
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wayline.errors import (
    WaylineError,
)
from wayline.graph import travel
from wayline.graph.algo import with_pending
from wayline.graph.branches import thread_head
from wayline.graph.cache import NODE_NS
from wayline.graph.channels import Barrier, Channel
from wayline.graph.channels.overwrite import Overwrite
from wayline.graph.checkpoint import (
    DEFAULT_BLOB_THRESHOLD,
)
from wayline.graph.context import coerce_context
from wayline.graph.driving import (
    breakpoint_sets,
    configs,
)
from wayline.graph.identity import fingerprint_of, shape_json, shape_of
from wayline.graph.input_checkpoint import input_target
from wayline.graph.inspection import Inspection, Verification
from wayline.graph.invoke_modes import alisted_modes, listed_modes
from wayline.graph.jsonschema import JsonSchemas
from wayline.graph.loop import RunLoop, default_owner
from wayline.graph.loop_drivers import LoopDrivers
from wayline.graph.nested_stream import astream_child, called_from_node, stream_child
from wayline.graph.run_config import checked_config as _checked_config
from wayline.graph.run_config import inside_task as _inside_task
from wayline.graph.run_config import run_ids
from wayline.graph.run_config import same_run as _same_run
from wayline.graph.streaming import (
    EventBus,
    Formatter,
    checkpoint_events,
    parse_modes,
)
from wayline.graph.subgraph import SubgraphNode, run_child, task_state
from wayline.graph.subgraph_travel import open_pinned, strip
from wayline.graph.timeouts import TimeoutPolicy, check_async
from wayline.graph.types import Command, Send
from wayline.graph.updates import StateUpdates
from wayline.ids import RunRef
from wayline.interop import lc_trace
from wayline.interop.lc_trace import EventStream, end_root, start_root
from wayline.store.base import Store
from wayline.store.records import RunRecord, check_durability
from wayline.store.writer import Committer

if TYPE_CHECKING:
    from wayline.graph.builder import StateGraph

__all__ = ["CompiledGraph", "Verification"]

DEFAULT_STEP_LIMIT = 10_000
"""LangGraph 1.2 defaults ``recursion_limit`` to 10,007; wayline rounds it."""


class CompiledGraph(LoopDrivers, Inspection, StateUpdates, JsonSchemas, EventStream):
    """A validated graph bound to a store. Thread-safe: one instance serves many runs."""

    memory_store: Any = None
    trace_name: str | None = None
    """The root chain run's name for callbacks (None: the given name, else LangGraph's)."""
    step_timeout: float | None = None
    """Seconds a step's async tasks may take (LangGraph's ``Pregel.step_timeout``): then
    those still running are cancelled and ``TimeoutError`` is raised; finished peers' writes
    are kept, as for any failed step."""
    cache: Any = None
    """LangGraph's node cache (``compile(cache=...)``; ``wayline.graph.cache``)."""
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
        for spec in self.nodes.values():
            check_async(spec.name, spec.timeout, spec.is_async)
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
        if not self.codec.is_registered(TimeoutPolicy):  # a Send's own timeout
            self.codec.register(TimeoutPolicy, "wayline.TimeoutPolicy")
        if not self.codec.is_registered(Overwrite):  # a step's writes hold it as written
            self.codec.register(Overwrite, "wayline.Overwrite")
        register = getattr(store, "register_reader", None)
        if register is not None:  # LangGraph's checkpointer.list/get_tuple read through it
            register(name, version, self)

    @property
    def checkpointer(self) -> Store:
        return self.store

    def with_store(self, store: Store) -> CompiledGraph:
        """The same graph bound to another store (a worker serves graphs on its own)."""
        if store is self.store:
            return self
        bound = copy.copy(self)
        bound.store = store
        register = getattr(store, "register_reader", None)
        if register is not None:
            register(bound.name, bound.version, bound)
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

    def copy(self, update: Mapping[str, Any] | None = None) -> CompiledGraph:
        """A shallow copy with ``update``'s attributes replaced (LangGraph's
        ``Pregel.copy``); a name the graph does not have is refused."""
        bound = copy.copy(self)
        for key, value in (update or {}).items():
            if not hasattr(self, key):
                raise TypeError(f"copy(update=...): a compiled graph has no attribute {key!r}")
            setattr(bound, key, value)
        return bound

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

        return DrawableGraph.of(self, xray=xray)

    def subgraph_nodes(self) -> list[tuple[str, CompiledGraph]]:
        """The nodes that run a compiled graph (one added as a node), with that graph."""
        found = []
        for name, spec in self.builder.nodes.items():
            fn = getattr(self.nodes.get(name), "fn", None) or getattr(spec, "fn", None)
            if isinstance(fn, SubgraphNode):
                found.append((name, fn.child))
        return found

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Forget cached node outputs (of ``nodes``; None: every node's)."""
        if self.cache is not None:
            names = self.nodes if nodes is None else nodes
            self.cache.clear([(NODE_NS, n) for n in names])

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        self.clear_cache(nodes)

    def new_channels(self) -> dict[str, Channel]:
        channels = self.schema.new_channels()
        channels.update({k: b.fresh() for k, b in self.barriers.items()})
        return channels

    # -- running ----------------------------------------------------------------------

    @listed_modes
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
        root = start_root(config, self.run_name(), input)
        try:
            out = self._invoke(
                input,
                config,
                context,
                durability,
                interrupt_before,
                interrupt_after,
                root=root,
                kwargs=kwargs,
            )
        except BaseException as exc:
            end_root(root, error=exc)
            raise
        end_root(root, out)
        return out

    def _invoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None,
        context: Any,
        durability: str | None,
        interrupt_before: Sequence[str] | str | None,
        interrupt_after: Sequence[str] | str | None,
        *,
        root: Any = None,
        kwargs: Mapping[str, Any],
    ) -> dict[str, Any]:
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        while True:
            loop = self.make_loop(
                config, durability, context=context, control=kwargs.get("control"), input=input
            )
            loop.step_events = False  # only the result is read
            loop.invocation.trace = root
            for _ in self.run_loop(loop, input, breakpoints=breaks):
                pass
            if loop.sleeping_until is None:
                return self._result(loop)
            time.sleep(max(0.0, loop.sleeping_until - time.time()))  # a durable timer:
            input, config = None, _same_run(config, loop)  # committed: continue when due

    def stream(
        self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Stream a run. ``stream_mode`` defaults to ``"updates"``, as LangGraph's; a list of
        modes yields ``(mode, chunk)``; ``subgraphs=True`` prefixes the namespace. Callbacks
        in ``config`` see the call as a chain run (``lc_trace``)."""
        if lc_trace.traces(config) and not called_from_node(config):
            return lc_trace.traced(
                self._stream, self._result, self.run_name(), input, config, kwargs
            )
        return self._stream(input, config, **kwargs)

    def _stream(
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
        modes, single = parse_modes(stream_mode or "updates")
        if called_from_node(config):  # the running node's subgraph (nested_stream)
            yield from stream_child(self, input, modes, single, subgraphs, context)
            return
        loop = self.make_loop(
            config, durability, context=context, control=kwargs.get("control"), input=input
        )
        loop.invocation.trace = lc_trace.root_of(kwargs, loop)
        fmt = self._streaming(loop, modes, single, subgraphs, config)
        fmt.wrote = not _empty(input)  # as LangGraph: input that writes nothing shows nothing
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        for mode, chunk in self.run_loop(loop, input, breakpoints=breaks):
            yield from fmt(mode, chunk)
            if mode == "values" and "__interrupt__" not in chunk and fmt.wants_checkpoints:
                for event in checkpoint_events(loop, chunk, self._task_states(loop)):
                    yield from fmt("checkpoints_src", event)
        if loop.sleeping_until is not None:  # a durable timer: continue when it is due
            time.sleep(max(0.0, loop.sleeping_until - time.time()))
            yield from self._stream(
                None,
                _same_run(config, loop),
                context=context,
                stream_mode=stream_mode,
                subgraphs=subgraphs,
                durability=durability,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                **kwargs,
            )
            return
        if (loop.raised or loop.halted) and loop.pending:  # as LangGraph: finished tasks' writes
            fmt.wrote = True
            yield from fmt("values", with_pending(loop.channels, loop.pending.values()))

    @alisted_modes
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
        root = start_root(config, self.run_name(), input)
        try:
            out = await self._ainvoke(
                input,
                config,
                context,
                durability,
                interrupt_before,
                interrupt_after,
                root=root,
                kwargs=kwargs,
            )
        except BaseException as exc:
            end_root(root, error=exc)
            raise
        end_root(root, out)
        return out

    async def _ainvoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None,
        context: Any,
        durability: str | None,
        interrupt_before: Sequence[str] | str | None,
        interrupt_after: Sequence[str] | str | None,
        *,
        root: Any = None,
        kwargs: Mapping[str, Any],
    ) -> dict[str, Any]:
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        while True:
            loop = self.make_loop(
                config, durability, context=context, control=kwargs.get("control"), input=input
            )
            loop.step_events = False  # only the result is read
            loop.invocation.trace = root
            async for _ in self._adrive(loop, input, breaks):
                pass
            if loop.sleeping_until is None:
                return self._result(loop)
            await asyncio.sleep(max(0.0, loop.sleeping_until - time.time()))
            input, config = None, _same_run(config, loop)

    def astream(
        self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """``stream``, async."""
        if lc_trace.traces(config) and not called_from_node(config):
            return lc_trace.atraced(
                self._astream, self._result, self.run_name(), input, config, kwargs
            )
        return self._astream(input, config, **kwargs)

    async def _astream(
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
        if called_from_node(config):  # the running node's subgraph (nested_stream)
            child = astream_child(self, input, modes, single, subgraphs, context)
            async with contextlib.aclosing(child):  # closed with this stream, not later
                async for item in child:
                    yield item
            return
        loop = self.make_loop(
            config, durability, context=context, control=kwargs.get("control"), input=input
        )
        loop.invocation.trace = lc_trace.root_of(kwargs, loop)
        fmt = self._streaming(loop, modes, single, subgraphs, config, live=True)
        fmt.wrote = not _empty(input)  # as LangGraph: input that writes nothing shows nothing
        breaks = self.breakpoints(interrupt_before, interrupt_after)
        # Closed with this stream: a consumer that stops reading cancels the nodes still
        # running, and they have stopped when its ``aclose`` returns (as LangGraph).
        async with contextlib.aclosing(self._adrive(loop, input, breaks)) as driven:
            async for mode, chunk in driven:
                for item in fmt(mode, chunk):
                    yield item
                if mode == "values" and "__interrupt__" not in chunk and fmt.wants_checkpoints:
                    for event in checkpoint_events(loop, chunk, self._task_states(loop)):
                        for item in fmt("checkpoints_src", event):
                            yield item
        if (loop.raised or loop.halted) and loop.pending:  # as stream: finished tasks' writes
            fmt.wrote = True
            for item in fmt("values", with_pending(loop.channels, loop.pending.values())):
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

    def _task_states(self, loop: RunLoop) -> Callable[[str, str], Any]:
        """A task's ``state`` in this run's ``checkpoints`` chunks (``task_state``)."""
        return functools.partial(task_state, self, loop.tenant_id, loop.run_id)

    def _streaming(
        self,
        loop: RunLoop,
        modes: set[str],
        single: bool,
        subgraphs: bool,
        config: Mapping[str, Any] | None = None,
        *,
        live: bool = False,
    ) -> Formatter:
        """The formatter of a stream; ``live`` (the async driver): each task's update goes
        out when the task finishes, as LangGraph's, not when its step ends."""
        fmt = Formatter(modes, single, subgraphs, self.schema.visible, lambda: loop.step + 1)
        fmt.checkpointed = self.requires_thread_id
        if modes - {"values", "updates"} or subgraphs or live:
            loop.invocation.emit = EventBus(modes, subgraphs)
            if "messages" in modes:
                try:
                    from wayline.interop.lc_stream import ChatStream
                except ImportError:
                    raise WaylineError(
                        'stream_mode="messages" streams langchain-core chat models: '
                        "pip install 'wayline[langchain]'"
                    ) from None

                given = {**self.config, **(config or {})}.get("configurable") or {}
                loop.invocation.chat_callbacks = ChatStream(loop.invocation.emit, given)
        return fmt

    def breakpoints(
        self, before: Sequence[str] | str | None, after: Sequence[str] | str | None
    ) -> tuple[frozenset[str], frozenset[str]]:
        """The nodes to pause before and after for ``interrupt_before``/``interrupt_after``
        as given (``"*"``: every node; None: the compiled-in ones); ``run_loop`` takes it."""
        return breakpoint_sets(
            self.nodes, before, after, self.interrupt_before, self.interrupt_after
        )

    def run_name(self) -> str:
        """The name callbacks see the call's root run under, as LangGraph names it."""
        return self.trace_name or self.given_name or "LangGraph"

    def _result(self, loop: RunLoop) -> dict[str, Any]:
        """The state's output keys (typed as the dict it is for every schema but a
        single-value one, whose value it is). Interrupted: with ``"__interrupt__"``, the
        questions; a single-value state's result is then those alone, as LangGraph's."""
        out = self.output_of(with_pending(loop.channels, loop.pending.values()))
        if loop.raised:  # as LangGraph: a value that is not a dict gives way to the questions
            asked = {"__interrupt__": list(loop.raised)}
            out = {**out, **asked} if isinstance(out, dict) else asked
        return typing.cast("dict[str, Any]", out)

    def make_loop(
        self,
        config: Mapping[str, Any] | None,
        durability: str | None,
        *,
        context: Any = None,
        control: Any = None,
        input: Any = None,
    ) -> RunLoop:
        """A loop for one invocation (``config`` merged over ``with_config``'s); a dict
        ``context`` becomes the context schema (a dataclass or pydantic model), as in
        LangGraph, so a wrong one fails here, before anything is written. New ``input``
        given at an input checkpoint replaces the input that followed it (``_loop``)."""
        context = coerce_context(self.context_schema, context)
        merged = dict(self.config)
        merged.update(_checked_config(config))
        if "configurable" in self.config and config and "configurable" in config:
            merged["configurable"] = {**self.config["configurable"], **config["configurable"]}
        fresh_input = input is not None and not isinstance(input, Command)
        loop = self._loop(merged, durability or merged.get("durability") or "sync", fresh_input)
        loop.invocation.context = context
        loop.invocation.control = control
        return loop

    def _loop(
        self, config: Mapping[str, Any] | None, durability: str, fresh_input: bool = False
    ) -> RunLoop:
        config = dict(config or {})
        tenant, run_id = run_ids(config, create=not self.requires_thread_id)
        config.setdefault("configurable", {})
        if self.requires_thread_id:  # a thread goes on from its latest checkpoint's run
            run_id = thread_head(self.store, tenant, run_id, config["configurable"])
        config["configurable"] = {**config["configurable"], "thread_id": run_id}
        check_durability(durability)
        conf = config["configurable"]
        if (
            not self.requires_thread_id
            and conf.get("checkpoint_id")
            and self.store.get_run(tenant, run_id) is None
        ):  # no checkpointer, a new thread: no checkpoint to go back to, so the id is the
            # caller's label (a platform's, say), which LangGraph ignores too
            config["configurable"] = {k: v for k, v in conf.items() if k != "checkpoint_id"}
        if fresh_input:  # new input at an input checkpoint forks before the input it had
            config = dict(input_target(self.store, config, tenant, run_id))
            tenant, run_id = run_ids(config, create=False)
        owner, token = default_owner(), None
        pinned = open_pinned(self, config, tenant, owner)  # a subgraph's checkpoint
        if pinned is not None:
            config = strip(config, pinned.fork_id)
        fork = (
            (pinned.fork_id, pinned.token)
            if pinned is not None
            else travel.open_replay(self, config, tenant, run_id, owner)
        )
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


def _empty(input: Any) -> bool:
    """An input that writes no state key (``{}``, a schema instance with nothing set)."""
    return isinstance(input, Mapping) and not input
