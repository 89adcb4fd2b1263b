"""StateGraph: the builder, mirroring LangGraph's so that porting a graph is mechanical."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wayline.codec import Codec, default_codec
from wayline.effects.retry import RetryPolicy
from wayline.errors import (
    DuplicateNodeError,
    EmptySequenceError,
    GraphError,
    InvalidCheckpointerError,
    UnknownNodeError,
)
from wayline.graph.compiled import CompiledGraph
from wayline.graph.node import Branch, NodeSpec
from wayline.graph.schema import StateSchema
from wayline.graph.subgraph import SubgraphNode, as_node_callable
from wayline.graph.timeouts import TimeoutPolicy
from wayline.graph.types import END, START

if TYPE_CHECKING:
    from wayline.graph.channels import Channel
    from wayline.store.base import Store

__all__ = ["Migration", "StateGraph"]

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""State of the old version in, state of the new version out."""

_RESERVED_CHARS = (":", "|")


def _plain(name: str) -> str:
    """A node name as a plain ``str``: a ``str`` enum member (``class Name(str, Enum)``,
    as LangGraph allows) is its value, so routes store and compare as text."""
    return str.__str__(name) if type(name) is not str and isinstance(name, str) else name


DEFAULT_HANDLER = "__default_error_handler__"


class StateGraph:
    """A graph of nodes over a typed state (TypedDict, dataclass or pydantic model)."""

    def __init__(
        self,
        state_schema: type | None = None,
        context_schema: type | None = None,
        *,
        input_schema: type | None = None,
        output_schema: type | None = None,
        name: str | None = None,
        version: str = "1",
        schema_version: str | None = None,
        codec: Codec | None = None,
    ) -> None:
        """``StateGraph(State, Context, input_schema=In, output_schema=Out)`` as in
        LangGraph: the state's channels are the union of the three schemas' keys; the input
        is read through ``input_schema`` and ``invoke`` returns the ``output_schema`` keys;
        nodes get ``invoke(..., context=Context(...))`` as ``runtime.context``."""
        if state_schema is None:
            if input_schema is None:
                raise GraphError("StateGraph needs a state schema: StateGraph(State)")
            state_schema = input_schema
        self.codec = codec or default_codec
        self.schema = StateSchema.from_class(state_schema, self.codec)
        self.context_schema = context_schema
        self.state_cls = state_schema
        self.input_cls = input_schema or state_schema
        self.output_cls = output_schema or state_schema
        """The three schemas as given (``get_input_jsonschema`` describes them)."""
        self.input_keys: tuple[str, ...] | None = None
        self.output_keys: tuple[str, ...] | None = None
        if input_schema is not None and input_schema is not state_schema:
            self.input_keys = self._add_schema(input_schema)
        if output_schema is not None and output_schema is not state_schema:
            self.output_keys = self._add_schema(output_schema)
        self.name: str = name or str(getattr(state_schema, "__name__", "graph"))
        self.version = version
        self.schema_version = schema_version or self.schema.fingerprint
        self.migrations: dict[str, Migration] = {}
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: set[tuple[str, str]] = set()
        self.waiting_edges: set[tuple[tuple[str, ...], str]] = set()
        self.branches: dict[str, list[Branch]] = {}
        self.default_retry: RetryPolicy | tuple[RetryPolicy, ...] | None = None
        self.default_timeout: TimeoutPolicy | None = None
        self.default_cache: Any = None
        self.default_handler: NodeSpec | None = None

    @property
    def channels(self) -> Mapping[str, Channel]:
        """The state's channels by key, every schema's keys included (LangGraph's
        ``StateGraph.channels``; the channel classes are wayline's)."""
        return self.schema.channels

    @property
    def managed(self) -> Mapping[str, str]:
        """The state's managed keys (``RemainingSteps``, ``IsLastStep``) and their kinds."""
        return self.schema.managed

    def _add_schema(self, cls: type) -> tuple[str, ...]:
        """Add the channels of another schema (input, output, a node's input) to the
        state's; return its keys."""
        other = StateSchema.from_class(cls, self.codec)
        merged = dict(self.schema.channels)
        for key, channel in other.channels.items():
            merged.setdefault(key, channel)
        self.schema = dataclasses.replace(self.schema, channels=merged)
        return tuple(other.channels)

    # -- building ---------------------------------------------------------------------

    def add_node(
        self,
        node: str | Callable[..., Any] | CompiledGraph,
        action: Callable[..., Any] | CompiledGraph | Mapping[str, Any] | None = None,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        input_schema: type | None = None,
        destinations: Sequence[str] | Mapping[str, str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        defer: bool = False,
        cache_policy: Any = None,
        error_handler: Callable[..., Any] | None = None,
        timeout: Any = None,
    ) -> StateGraph:
        """Add a node; ``retry_policy`` re-runs it in place, within its step, when it raises
        (a node-level retry, as in LangGraph; effects it already performed are not redone).

        ``action`` may be a compiled graph: it runs as a subgraph on the keys it shares
        with this graph, checkpointed under its own namespace. ``input_schema`` (or the
        annotation of the node's first parameter) narrows what the node reads;
        ``destinations`` says where a node returning ``Command(goto=...)`` may go.
        ``error_handler(state, error: NodeError)`` runs once the node failed for good; its
        return value is the node's output (updates, ``Command``), committed with the step."""
        policy = TimeoutPolicy.coerce(timeout)  # a bad timeout fails here, as LangGraph's
        del metadata  # LangGraph shows it in traces; wayline has no use for it
        if isinstance(node, str):
            node = _plain(node)
        else:
            action = node
            found = getattr(node, "__name__", None) or getattr(node, "name", None)
            node = found if isinstance(found, str) else type(action).__name__
        if action is None:
            raise GraphError(f"add_node({node!r}) needs a function to run")
        if node in (START, END):
            raise GraphError(f"{node!r} is reserved; choose another node name")
        if any(c in node for c in _RESERVED_CHARS):
            raise GraphError(f"node name {node!r} may not contain any of {_RESERVED_CHARS}")
        if node in self.nodes:
            raise DuplicateNodeError(f"a node named {node!r} already exists; names must be unique")
        if isinstance(action, CompiledGraph):  # a subgraph: runs on the keys it shares
            fn: Callable[..., Any] = SubgraphNode(action, tuple(self.schema.channels))
        else:
            fn = as_node_callable(action)
        spec = NodeSpec.of(
            node, fn, _policies(retry_policy), input_schema=input_schema, destinations=destinations
        )
        spec = dataclasses.replace(spec, timeout=policy, defer=defer, cache=cache_policy)
        if error_handler is not None:
            handler = NodeSpec.of(f"__error_handler__{node}", error_handler)
            spec = dataclasses.replace(spec, error_handler=handler)
        if spec.input_schema is not None and spec.input_schema is not self.schema.cls:
            self._add_schema(spec.input_schema)
        self.nodes[node] = spec
        return self

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        error_handler: Callable[..., Any] | None = None,
        cache_policy: Any = None,
        timeout: Any = None,
    ) -> StateGraph:
        """Defaults for every node that sets none of its own (before or after this call):
        a retry policy and an error handler, as LangGraph's ``set_node_defaults``."""
        if cache_policy is not None:
            self.default_cache = cache_policy
        if timeout is not None:
            self.default_timeout = TimeoutPolicy.coerce(timeout)
        if retry_policy is not None:
            self.default_retry = _policies(retry_policy)
        if error_handler is not None:
            self.default_handler = NodeSpec.of(DEFAULT_HANDLER, error_handler)
        return self

    def final_nodes(self) -> dict[str, NodeSpec]:
        """The nodes with ``set_node_defaults`` applied where a node has no setting."""
        if self.default_handler is not None and DEFAULT_HANDLER in self.nodes:
            raise DuplicateNodeError(
                f"a node is named {DEFAULT_HANDLER!r}, the name of the default error handler "
                "set_node_defaults(error_handler=...) adds: rename that node"
            )
        out = {}
        for name, spec in self.nodes.items():
            if spec.retry is None and self.default_retry is not None:
                spec = dataclasses.replace(spec, retry=self.default_retry)
            if spec.timeout is None and self.default_timeout is not None:
                spec = dataclasses.replace(spec, timeout=self.default_timeout)
            if spec.cache is None and self.default_cache is not None:
                spec = dataclasses.replace(spec, cache=self.default_cache)
            if spec.error_handler is None and self.default_handler is not None:
                spec = dataclasses.replace(spec, error_handler=self.default_handler)
            out[name] = spec
        return out

    def _handler_names(self) -> list[str]:
        """The names of the error handlers (``__error_handler__<node>``, the default's)."""
        found = {s.error_handler.name for s in self.nodes.values() if s.error_handler}
        if self.default_handler is not None:
            found.add(self.default_handler.name)
        return sorted(found)

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        """``a -> b``; with a list of starts, ``b`` waits until all of them have run."""
        end_key = _plain(end_key)
        if isinstance(start_key, str):
            start_key = _plain(start_key)
            if start_key == END:
                raise GraphError("END cannot be the start of an edge")
            if end_key == START:
                raise GraphError("START cannot be the end of an edge")
            self.edges.add((start_key, end_key))
        else:
            starts = tuple(_plain(k) for k in start_key)
            if not starts:
                raise GraphError("add_edge with a list of starts needs at least one start")
            if end_key == END and START not in starts and END not in starts:
                for start in starts:  # waiting to end is ending: nothing runs after either
                    self.edges.add((start, END))
                return self
            if START in starts or END in starts or end_key in (START, END):
                raise GraphError("a waiting edge joins nodes; START and END cannot take part")
            self.waiting_edges.add((tuple(sorted(set(starts))), end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        source = _plain(source)
        branch = Branch.of(path, path_map)
        if branch.input_schema is not None and branch.input_schema is not self.schema.cls:
            self._add_schema(branch.input_schema)  # its keys are channels, as a node's are
        self.branches.setdefault(source, []).append(branch)
        return self

    def add_sequence(
        self, nodes: Sequence[Callable[..., Any] | tuple[str, Callable[..., Any]]]
    ) -> StateGraph:
        """Add nodes and chain them with edges, in order."""
        if not nodes:
            raise EmptySequenceError(
                "add_sequence needs at least one node (a function, or a (name, function) pair)"
            )
        previous: str | None = None
        for item in nodes:
            if isinstance(item, tuple):
                name, fn = item
            else:
                fn = item
                name = getattr(fn, "__name__", None) or type(fn).__name__
            self.add_node(name, fn)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def migrate(self, from_version: str, to_version: str, fn: Migration) -> StateGraph:
        """Register how a run written by version ``from_version`` of this graph carries its
        state to ``to_version`` (this graph's version): ``fn(values) -> values``. Applied
        only on purpose, by ``Wayline.migrate``."""
        if to_version != self.version:
            raise GraphError(
                f"a migration registered on version {self.version!r} must lead to it, "
                f"not to {to_version!r}"
            )
        self.migrations[from_version] = fn
        return self

    def set_entry_point(self, key: str) -> StateGraph:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self,
        path: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> StateGraph:
        return self.add_edge(key, END)

    # -- compiling --------------------------------------------------------------------

    def validate(self) -> None:
        known = set(self.nodes)
        for src, dst in self.edges:
            _check(src, known | {START}, "edge start")
            _check(dst, known | {END}, "edge end")
        for srcs, dst in self.waiting_edges:
            for src in srcs:
                _check(src, known, "edge start")
            _check(dst, known, "edge end")
        for src, branches in self.branches.items():
            _check(src, known | {START}, "conditional edge source")
            for branch in branches:
                for end in branch.ends or ():
                    _check(end, known | {END}, f"conditional edge target from {src!r}")
        for name, spec in self.nodes.items():
            for end in spec.ends or ():
                _check(end, known | {END}, f"Command goto target of node {name!r}")
        if not any(s == START for s, _ in self.edges) and START not in self.branches:
            raise GraphError(
                "graph has no entry point: add_edge(START, 'first_node') or "
                "set_conditional_entry_point(...)"
            )
        # A graph whose only exit is the recursion limit is valid, as in LangGraph: it
        # runs and raises GraphRecursionError when config["recursion_limit"] is reached.

    def _successors(self) -> dict[str, set[str]]:
        everything = set(self.nodes) | {END}
        succ: dict[str, set[str]] = {n: set() for n in [START, *self.nodes]}
        for src, dst in self.edges:
            succ[src].add(dst)
        for srcs, dst in self.waiting_edges:
            for src in srcs:
                succ[src].add(dst)
        for src, branches in self.branches.items():
            for branch in branches:
                succ[src].update(branch.ends if branch.ends is not None else everything)
        for name, spec in self.nodes.items():
            succ[name].update(spec.ends if spec.ends is not None else everything)
            if not succ[name]:
                succ[name].add(END)  # a node with nowhere to go ends the run, as in LangGraph
        return succ

    def compile(
        self,
        checkpointer: Store | str | bool | None = None,
        *,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        debug: bool = False,
        store: Any = None,
        cache: Any = None,
        snapshot_every: int = 100,
        blob_threshold: int = 64 * 1024,
        verify_sample: float = 0.0,
        max_lag_steps: int = 8,
        max_lag_ms: float = 100.0,
        name: str | None = None,
        version: str | None = None,
        continue_without: Collection[str] = (),
    ) -> CompiledGraph:
        """Validate and freeze the graph. ``checkpointer`` is a store or a store URL; without
        one (None, or LangGraph's True/False flags), runs live in a private in-memory SQLite store.

        ``snapshot_every``: steps between snapshots; reading a run re-folds at most this many
        deltas. ``blob_threshold``: encoded values larger than this many bytes are stored
        once, by content digest, and referenced. ``verify_sample``: the fraction of finished
        runs (chosen by run id, so deterministically) reconstructed from the store right after
        they finish and checked against their committed digest. ``max_lag_steps`` and
        ``max_lag_ms``: how far durability "async" may run ahead of its writer, the most a
        hard kill can make a run replay.

        ``interrupt_before`` / ``interrupt_after`` (node names, or ``"*"``): pause the run
        before or after those nodes, as LangGraph's breakpoints; ``invoke(None, config)``
        continues it. ``store``: LangGraph's long-term memory (``wayline.memory``; a
        ``DurableStore`` on the run's database commits a node's writes with its step, see
        docs/memory.md). ``cache``: where nodes with a ``cache_policy`` keep their outputs
        (``wayline.graph.cache``; a cache is never read by a replay).
        ``continue_without``: data classes whose erasure this graph's nodes handle (they
        read ``Redacted`` tombstones), so a run with those classes redacted may continue;
        any other erased class makes resuming refused.
        """
        from wayline.memory.binding import check_memory_store

        check_memory_store(store, "compile(store=...)")
        del debug
        from wayline.store import open_store

        self.validate()
        if isinstance(snapshot_every, bool) or not isinstance(snapshot_every, int):
            raise GraphError(f"snapshot_every must be a whole number, not {snapshot_every!r}")
        if snapshot_every < 1:
            raise GraphError("snapshot_every must be at least 1")
        if checkpointer is None or checkpointer is True or checkpointer is False:
            bound = open_store("sqlite:///:memory:")
        elif isinstance(checkpointer, str):
            bound = open_store(checkpointer)
        elif callable(getattr(checkpointer, "get_run", None)) and callable(
            getattr(checkpointer, "commit", None)
        ):
            bound = checkpointer
        else:  # as LangGraph, refused at compile rather than at the first run
            raise InvalidCheckpointerError(
                f"Invalid checkpointer provided: {type(checkpointer).__name__} is not a "
                "wayline store; pass wayline.connect('sqlite:///runs.db') (or a postgresql:// "
                "URL), a store URL, InMemorySaver(), True (a subgraph's own thread) or None"
            )
        compiled = CompiledGraph(
            builder=self,
            store=bound,
            interrupt_before=_node_list(interrupt_before, self.nodes, self._handler_names()),
            interrupt_after=_node_list(interrupt_after, self.nodes, self._handler_names()),
            snapshot_every=snapshot_every,
            blob_threshold=blob_threshold,
            verify_sample=verify_sample,
            max_lag_steps=max_lag_steps,
            max_lag_ms=max_lag_ms,
            name=name or self.name,
            version=version or self.version,
        )
        compiled.given_name = name
        compiled.persistent_child = checkpointer is True
        compiled.requires_thread_id = not (checkpointer is None or isinstance(checkpointer, bool))
        compiled.continue_without = frozenset(continue_without)
        compiled.memory_store = store
        compiled.cache = cache
        return compiled


def _node_list(
    names: Sequence[str] | str | None, nodes: Mapping[str, Any], handlers: Sequence[str] = ()
) -> tuple[str, ...]:
    """Breakpoint names, checked: nodes, or error handlers, which LangGraph
    makes nodes of their own (``__error_handler__<node>``); ``"*"`` is every node."""
    if names is None:
        return ()
    if names == "*" or (not isinstance(names, str) and list(names) == ["*"]):
        return tuple(nodes)
    listed = (names,) if isinstance(names, str) else tuple(names)
    for name in listed:
        _check(name, {*nodes, *handlers}, "breakpoint")
    return listed


_LANGGRAPH_SAYS = {
    "edge start": "Found edge starting at unknown node",
    "edge end": "Found edge ending at unknown node",
}
"""LangGraph's words for these, said first so that a ported check of the message holds."""


def _check(name: str, allowed: set[str], what: str) -> None:
    if name not in allowed:
        known = sorted(n for n in allowed if not n.startswith("__"))
        said = f"{_LANGGRAPH_SAYS[what]} {name!r}: " if what in _LANGGRAPH_SAYS else ""
        raise UnknownNodeError(f"{said}{what} {name!r} is not a node of this graph; nodes: {known}")


def _closure(start: str, succ: Mapping[str, set[str]]) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for nxt in succ.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _policies(
    given: RetryPolicy | Sequence[RetryPolicy] | None,
) -> RetryPolicy | tuple[RetryPolicy, ...] | None:
    """One policy, or a sequence tried in order (the first whose ``retry_on`` matches)."""
    if given is None or isinstance(given, RetryPolicy):
        return given
    return tuple(given) or None
