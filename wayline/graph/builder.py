"""StateGraph: the builder, mirroring LangGraph's so that porting a graph is mechanical."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wayline.codec import Codec, default_codec
from wayline.effects.retry import RetryPolicy
from wayline.errors import DuplicateNodeError, GraphError, NoPathToEndError, UnknownNodeError
from wayline.graph.node import Branch, NodeSpec
from wayline.graph.schema import StateSchema
from wayline.graph.types import END, START

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph
    from wayline.store.base import Store

__all__ = ["Migration", "StateGraph"]

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""State of the old version in, state of the new version out."""

_RESERVED_CHARS = (":", "|")


class StateGraph:
    """A graph of nodes over a typed state (TypedDict, dataclass or pydantic model)."""

    def __init__(
        self,
        state_schema: type,
        *,
        name: str | None = None,
        version: str = "1",
        schema_version: str | None = None,
        codec: Codec | None = None,
    ) -> None:
        self.codec = codec or default_codec
        self.schema = StateSchema.from_class(state_schema, self.codec)
        self.name: str = name or str(getattr(state_schema, "__name__", "graph"))
        self.version = version
        self.schema_version = schema_version or self.schema.fingerprint
        self.migrations: dict[str, Migration] = {}
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: set[tuple[str, str]] = set()
        self.waiting_edges: set[tuple[tuple[str, ...], str]] = set()
        self.branches: dict[str, list[Branch]] = {}

    # -- building ---------------------------------------------------------------------

    def add_node(
        self,
        node: str | Callable[..., Any],
        action: Callable[..., Any] | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
    ) -> StateGraph:
        """Add a node; ``retry_policy`` re-runs it in place, within its step, when it raises
        (a node-level retry, as in LangGraph; effects it already performed are not redone)."""
        if not isinstance(node, str):
            action, node = node, getattr(node, "__name__", None) or type(node).__name__
        if action is None:
            raise GraphError(f"add_node({node!r}) needs a function to run")
        if node in (START, END):
            raise GraphError(f"{node!r} is reserved; choose another node name")
        if any(c in node for c in _RESERVED_CHARS):
            raise GraphError(f"node name {node!r} may not contain any of {_RESERVED_CHARS}")
        if node in self.nodes:
            raise DuplicateNodeError(f"a node named {node!r} already exists; names must be unique")
        if node in self.schema.channels:
            raise GraphError(
                f"node {node!r} has the name of a state key; rename the node or the key"
            )
        self.nodes[node] = NodeSpec.of(node, action, retry_policy)
        return self

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> StateGraph:
        """``a -> b``; with a list of starts, ``b`` waits until all of them have run."""
        if isinstance(start_key, str):
            if start_key == END:
                raise GraphError("END cannot be the start of an edge")
            if end_key == START:
                raise GraphError("START cannot be the end of an edge")
            self.edges.add((start_key, end_key))
        else:
            starts = tuple(start_key)
            if not starts:
                raise GraphError("add_edge with a list of starts needs at least one start")
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
        self.branches.setdefault(source, []).append(Branch.of(path, path_map))
        return self

    def add_sequence(
        self, nodes: Sequence[Callable[..., Any] | tuple[str, Callable[..., Any]]]
    ) -> StateGraph:
        """Add nodes and chain them with edges, in order."""
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
        self, path: Callable[..., Any], path_map: Mapping[Hashable, str] | None = None
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
        self._check_paths_to_end()

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

    def _check_paths_to_end(self) -> None:
        succ = self._successors()
        reachable = _closure(START, succ)
        reaches_end = {n for n in reachable if n == END or END in _closure(n, succ)}
        if END not in reachable:
            raise NoPathToEndError("no path from START reaches END; add an edge to END")
        trapped = sorted(n for n in reachable if n not in reaches_end)
        if trapped:
            raise NoPathToEndError(
                f"node(s) {trapped} can never reach END (they loop forever); add an edge or a "
                "conditional edge from the loop to END"
            )

    def compile(
        self,
        checkpointer: Store | str | None = None,
        *,
        snapshot_every: int = 100,
        blob_threshold: int = 64 * 1024,
        verify_sample: float = 0.0,
        max_lag_steps: int = 8,
        max_lag_ms: float = 100.0,
        name: str | None = None,
        version: str | None = None,
    ) -> CompiledGraph:
        """Validate and freeze the graph. ``checkpointer`` is a store or a store URL; without
        one, runs live in a private in-memory SQLite store.

        ``snapshot_every``: steps between snapshots; reading a run re-folds at most this many
        deltas. ``blob_threshold``: encoded values larger than this many bytes are stored
        once, by content digest, and referenced. ``verify_sample``: the fraction of finished
        runs (chosen by run id, so deterministically) reconstructed from the store right after
        they finish and checked against their committed digest. ``max_lag_steps`` and
        ``max_lag_ms``: how far durability "async" may run ahead of its writer, the most a
        hard kill can make a run replay.
        """
        from wayline.graph.compiled import CompiledGraph
        from wayline.store import open_store

        self.validate()
        if snapshot_every < 1:
            raise GraphError("snapshot_every must be at least 1")
        if checkpointer is None:
            store = open_store("sqlite:///:memory:")
        elif isinstance(checkpointer, str):
            store = open_store(checkpointer)
        else:
            store = checkpointer
        compiled = CompiledGraph(
            builder=self,
            store=store,
            snapshot_every=snapshot_every,
            blob_threshold=blob_threshold,
            verify_sample=verify_sample,
            max_lag_steps=max_lag_steps,
            max_lag_ms=max_lag_ms,
            name=name or self.name,
            version=version or self.version,
        )
        compiled.requires_thread_id = checkpointer is not None
        return compiled


def _check(name: str, allowed: set[str], what: str) -> None:
    if name not in allowed:
        known = sorted(n for n in allowed if not n.startswith("__"))
        raise UnknownNodeError(f"{what} {name!r} is not a node of this graph; nodes: {known}")


def _closure(start: str, succ: Mapping[str, set[str]]) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for nxt in succ.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
