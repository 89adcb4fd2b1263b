"""Time travel to a subgraph's checkpoint, as LangGraph spells it.

``get_state(config, subgraphs=True)`` gives each child state a config naming it the way
LangGraph does: ``checkpoint_ns`` (the child's namespace, ``"node:task_id|..."``, or
``"node"`` for a child compiled with ``checkpointer=True``) and ``checkpoint_map``, the
checkpoint of every graph from the root (``""``) down to that child. The config keeps the
child run as its ``thread_id``, so reading it (``get_state``) reads the child.

The root graph invoked (or updated) with such a config goes back there: a subgraph's
checkpoints are a run of their own (docs/porting.md), so the root run is forked at its
checkpoint in the map and each child run on the way down is forked at its own, under the id
the fork's task derives for its child. The fork's task then meets its child where the
config named it: the nodes after that checkpoint run again (an ``interrupt`` there asks its
question again: a fork holds no answers), the ones before it do not. ``update_state`` with
such a config edits the deepest of those child forks and returns the root fork's config.
Each fork is a fork like any other (``wayline.graph.travel``): its effect mode (``effects``
in the config, default ``original``) and its origin record apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from wayline.errors import TimeTravelError
from wayline.graph import travel
from wayline.graph.child_names import NS_SEP, SEP, above_of, named_snapshot
from wayline.graph.run_config import checked_config
from wayline.graph.subgraph import _CHILD_GRAPHS, SubgraphNode, as_child_of, child_run_id
from wayline.graph.types import StateSnapshot
from wayline.store.base import Store

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["Pinned", "by_namespace", "name_children", "open_pinned", "strip", "subgraph_named"]


_KEYS = ("checkpoint_ns", "checkpoint_map", "checkpoint_id", "step")


def name_children(
    snapshot: StateSnapshot, parents: Mapping[str, str] | None = None
) -> StateSnapshot:
    """``snapshot`` (a root's state with its children's) with each child state named as
    LangGraph names it (``child_names``): the root's thread, its ``checkpoint_ns`` and the
    ``checkpoint_map`` down to it."""
    conf = snapshot.config["configurable"]
    above = dict(parents) if parents is not None else {"": conf["checkpoint_id"]}
    tasks = []
    for task in snapshot.tasks:
        state = task.state
        if isinstance(state, StateSnapshot):
            named = named_snapshot(state, above)
            state = name_children(named, named.config["configurable"]["checkpoint_map"])
            task = dataclasses.replace(task, state=state)
        tasks.append(task)
    return dataclasses.replace(snapshot, tasks=tuple(tasks))


def child_naming(
    store: Store, asked: Mapping[str, Any], run_id: str
) -> Callable[[StateSnapshot], StateSnapshot] | None:
    """How a child run's checkpoints are named for a config that asked for them as
    LangGraph's (the root's ``thread_id`` and a ``checkpoint_ns``): over the checkpoints
    above it (``asked``'s ``checkpoint_map``, else those its task ran under, looked up
    once). None: asked by the child run's own id, named as it is. A child run belongs to
    one task, which ran under one checkpoint of each graph above it."""
    conf = asked.get("configurable") or {}
    ns = conf.get("checkpoint_ns")
    if not ns:
        return None
    above = {k: v for k, v in (conf.get("checkpoint_map") or {}).items() if k != ns}
    above = above or above_of(store, str(conf.get("tenant", "default")), run_id)
    return lambda snapshot: named_snapshot(snapshot, above)


@dataclasses.dataclass(frozen=True, slots=True)
class Pinned:
    """The forks a subgraph checkpoint's config made: the root's (whose lease ``token``
    holds), and the deepest child's with its graph."""

    fork_id: str
    step: int
    token: int
    leaf: CompiledGraph
    leaf_run: str


def names_subgraph(config: Mapping[str, Any]) -> bool:
    """Whether ``config`` names a subgraph's checkpoint (LangGraph's ``checkpoint_ns`` and
    ``checkpoint_map``, as ``get_state(subgraphs=True)`` gives them)."""
    conf = config.get("configurable") or {}
    cmap = conf.get("checkpoint_map")
    return bool(conf.get("checkpoint_ns")) and isinstance(cmap, Mapping) and "" in cmap


def strip(config: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """``config`` for the root fork ``run_id``: the subgraph checkpoint's keys dropped."""
    conf = {k: v for k, v in (config.get("configurable") or {}).items() if k not in _KEYS}
    return {**config, "configurable": {**conf, "thread_id": run_id}}


def open_pinned(
    graph: CompiledGraph, config: Mapping[str, Any], tenant: str, owner: str
) -> Pinned | None:
    """When ``config`` names a subgraph's checkpoint: fork the root and each child run down
    to that subgraph at the checkpoints its map names (the root's lease held by ``owner``).
    None: an ordinary config."""
    if not names_subgraph(config):
        return None
    conf = config["configurable"]
    cmap: Mapping[str, Any] = conf["checkpoint_map"]
    store = graph.store
    root = str(conf.get("thread_id", "")).split(SEP)[0]
    step = _step(cmap[""], tenant, root)
    levels = _levels(store, tenant, root, str(conf["checkpoint_ns"]), cmap)  # before any fork
    fork_id = str(conf.get("fork_id") or travel.fork_id_for(store, tenant, root, step))
    effects = str(conf.get("effects", "original"))
    actor = str(conf.get("actor", "client"))
    token = travel.create_fork(
        store, tenant, root, step, new_run_id=fork_id, effects=effects, owner=owner, actor=actor
    )
    parent, parent_run = graph, fork_id
    try:
        for seg, src_child, at in levels:
            parent, new_child = _child_in_fork(parent, tenant, parent_run, seg, src_child)
            child_token = travel.create_fork(
                store,
                tenant,
                src_child,
                at,
                new_run_id=new_child,
                effects=effects,
                owner=owner,
                actor=actor,
            )
            store.release(tenant, new_child, child_token)
            parent_run = new_child
    except BaseException:
        store.release(tenant, fork_id, token)
        raise
    return Pinned(fork_id, step, token, parent, parent_run)


def by_namespace(graph: CompiledGraph, config: Mapping[str, Any]) -> Mapping[str, Any]:
    """``config`` naming a subgraph as LangGraph's reads do (the root's ``thread_id`` and
    the subgraph's ``checkpoint_ns``, as a task's ``state`` or a subgraph's ``checkpoints``
    chunk shows it) as the config of the subgraph's run, when that run exists or the
    namespace starts at a subgraph node of ``graph`` (a child not run yet: its state is
    empty); else ``config`` as given (a node's own config names its task's namespace)."""
    conf = checked_config(config).get("configurable") or {}
    ns, thread = conf.get("checkpoint_ns"), conf.get("thread_id")
    if not ns or thread is None or SEP in str(thread):
        return config
    segments = str(ns).split(NS_SEP)
    run_id = SEP.join((str(thread), *segments))
    node = graph.nodes.get(segments[0].split(":")[0])
    if not isinstance(getattr(node, "fn", None), SubgraphNode) and (
        graph.store.get_run(str(conf.get("tenant", "default")), run_id) is None
    ):
        return config
    return {**config, "configurable": {**conf, "thread_id": run_id}}


def subgraph_named(graph: CompiledGraph, config: Mapping[str, Any]) -> CompiledGraph | None:
    """The subgraph (bound to ``graph``'s store) whose run ``config`` names, when it names
    a child run of ``graph`` (a child state's config, as ``get_state(subgraphs=True)`` gives
    it): ``graph.get_state(that_config)`` reads the child, as LangGraph's does. None: the
    config names a run of ``graph`` itself (or no run)."""
    conf = checked_config(config).get("configurable") or {}
    thread = str(conf.get("thread_id", ""))
    if thread.count(SEP) <= graph.name.count(SEP):  # a run at the graph's own depth: its own
        return None
    tenant = str(conf.get("tenant", "default"))
    root, *segs = thread.split(SEP)
    current, run_id = graph, root
    for seg in segs:
        run_id = f"{run_id}{SEP}{seg}"
        run = graph.store.get_run(tenant, run_id)
        if run is None:
            return None
        node = seg.split(":")[0]
        fn = current.nodes[node].fn if node in current.nodes else None
        child = fn.child if isinstance(fn, SubgraphNode) else _CHILD_GRAPHS.get(run.graph_name)
        if child is None:
            return None
        current = as_child_of(child, current, graph.store)
        if current.name != run.graph_name:  # not a run this graph's subgraph wrote
            return None
    return current


def _levels(
    store: Any, tenant: str, root: str, ns: str, cmap: Mapping[str, Any]
) -> list[tuple[str, str, int]]:
    """Each level down to namespace ``ns``: (its segment, the child run it names, the step
    the map names), or ``TimeTravelError`` for a level the map or the store lacks."""
    levels, path, source = [], [], root
    for seg in ns.split(NS_SEP):
        path.append(seg)
        key = NS_SEP.join(path)
        source = f"{source}{SEP}{seg}"
        if key not in cmap:
            raise TimeTravelError(
                f"checkpoint_map has no checkpoint for namespace {key!r} (run {source!r}); "
                "pass the config get_state(subgraphs=True) gave; nothing was forked"
            )
        if store.get_run(tenant, source) is None:
            raise TimeTravelError(
                f"no subgraph run {source!r} for tenant {tenant!r} to go back in; nothing "
                "was forked"
            )
        levels.append((seg, source, _step(cmap[key], tenant, source)))
    return levels


def _step(cid: Any, tenant: str, run_id: str) -> int:
    step = travel.requested_step({"configurable": {"checkpoint_id": cid}}, tenant, run_id)
    assert step is not None
    return step


def _child_in_fork(
    parent: CompiledGraph, tenant: str, parent_run: str, seg: str, source: str
) -> tuple[CompiledGraph, str]:
    """The child graph of namespace segment ``seg`` (bound under its parent) and the id of
    the run the task of fork ``parent_run`` will give it."""
    store = parent.store
    src = store.get_run(tenant, source)
    if src is None:
        raise TimeTravelError(f"no subgraph run {source!r} for tenant {tenant!r} to go back in")
    node, *rest = seg.split(":")
    fn = parent.nodes[node].fn if node in parent.nodes else None
    child = fn.child if isinstance(fn, SubgraphNode) else _CHILD_GRAPHS.get(src.graph_name)
    if child is None:
        raise TimeTravelError(
            f"run {source!r} is a subgraph this process has not run (graph {src.graph_name!r});"
            " run the parent graph once in this process, or go back from the parent's "
            "checkpoint"
        )
    bound = as_child_of(child, parent, store)
    if child.persistent_child:  # one thread per node: the fork's is the fork's id and the tail
        return bound, f"{parent_run}{SEP}{seg}"
    tasks = parent.get_state({"configurable": {"thread_id": parent_run, "tenant": tenant}}).tasks
    task = next((t for t in tasks if t.name == node), None)
    if task is None:
        raise TimeTravelError(
            f"fork {parent_run!r} does not run node {node!r} next, so it never meets the "
            f"subgraph run {source!r}; go back from an earlier checkpoint"
        )
    call = int(rest[1]) if len(rest) > 1 else 0
    return bound, child_run_id(parent_run, node, task.id, call)
