"""LangGraph's state-editing and async inspection methods on a compiled graph:
``update_state`` and ``bulk_update_state`` (each superstep one committed step), and the
``a``-prefixed twins of the inspection calls.

The async twins call the sync methods: reading a snapshot is a few indexed queries on a
store shared safely by threads, so they need no second implementation that could drift.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from wayline.errors import InvalidUpdateError, RunNotFoundError, TimeTravelError, UnknownNodeError
from wayline.graph import branches, travel
from wayline.graph.input_checkpoint import (
    Point,
    listed,
    step_results,
    update_target,
)
from wayline.graph.loop import default_owner
from wayline.graph.mixin import as_graph
from wayline.graph.run_config import checkpoint_config
from wayline.graph.run_config import run_ids as _ids
from wayline.graph.snapshot_source import mark
from wayline.graph.subgraph_travel import by_namespace, names_subgraph, open_pinned, subgraph_named
from wayline.graph.types import END, Command, StateSnapshot
from wayline.ids import RunRef
from wayline.store.records import CommitBatch, RunRecord

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["StateUpdate", "StateUpdates"]

COPY = "__copy__"
_NOT_NODES = (END, COPY)
INPUT = "__input__"
"""LangGraph's ``as_node`` for an update written as the graph's input (routed from START)."""
START_NODE = "__start__"
"""LangGraph's ``as_node`` for an update written as its START node (the input passed on)."""


class StateUpdate(NamedTuple):
    """One update of ``bulk_update_state``, as LangGraph's ``langgraph.types.StateUpdate``."""

    values: dict[str, Any] | Any | None
    as_node: str | None = None
    task_id: str | None = None


class StateUpdates:
    """Mixed into ``CompiledGraph``."""

    def update_state(
        self,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Write ``values`` into a run's state as a step of its own (a person correcting a
        paused run, say), folded through the reducers like any node's writes. With
        ``as_node`` the run continues as if that node had just written them. Returns the
        config of the new step."""
        graph = as_graph(self)
        return graph.bulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    def bulk_update_state(
        self,
        config: Mapping[str, Any],
        supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]],
    ) -> dict[str, Any]:
        """Several steps of updates at once: each superstep's updates fold together into
        one committed step, as parallel nodes' writes do. Returns the last step's config."""
        graph = as_graph(self)

        steps = _input_steps([[StateUpdate(*u) for u in superstep] for superstep in supersteps])
        if not steps:
            raise ValueError("No supersteps provided: pass [[StateUpdate(values, as_node)]]")
        if any(not s for s in steps):
            raise ValueError("No updates provided: each superstep needs at least one update")
        config = by_namespace(graph, config)
        if not names_subgraph(config) and (child := subgraph_named(graph, config)) is not None:
            return child.bulk_update_state(config, supersteps)  # a subgraph's run: its edit
        tenant, run_id = _ids(config, create=False)
        config = update_target(graph.store, config, tenant, run_id)  # an input checkpoint's
        tenant, run_id = _ids(config, create=False)
        head = branches.thread_head(graph.store, tenant, run_id, config.get("configurable") or {})
        if head != run_id:  # the thread's latest checkpoint is a fork's: the edit goes there
            config = {**config, "configurable": {**config["configurable"], "thread_id": head}}
            run_id = head
        if len(steps) == 1 and len(steps[0]) == 1 and steps[0][0].as_node == COPY:
            return _copy(graph, config, tenant, run_id)
        pinned = open_pinned(graph, config, tenant, default_owner())  # a subgraph's checkpoint
        if pinned is not None:  # its fork takes the edit; the root's fork goes on from there
            graph.store.release(tenant, pinned.fork_id, pinned.token)
            pinned.leaf.bulk_update_state(RunRef(tenant, pinned.leaf_run).config(), steps)
            return checkpoint_config(tenant, pinned.fork_id, pinned.step)
        # as LangGraph, a thread may start with an update: an empty input step first
        start: Any = {} if graph.store.get_run(tenant, run_id) is None else None
        first = steps[0]
        if start is not None and len(first) == 1 and first[0].as_node == INPUT:
            start, steps = first[0].values, steps[1:]  # the input step is that update
        for superstep in steps:
            _check_superstep(graph, superstep)
        loop = graph._loop(config, "sync")
        error: BaseException | None = None
        try:
            for _ in loop.begin(start):
                pass
            for superstep in steps:
                if len(superstep) == 1 and superstep[0].as_node is None and loop.step >= 0:
                    superstep = [superstep[0]._replace(as_node=_last_writer(graph, loop))]
                loop.update_many([(u.values, u.as_node) for u in superstep])
                as_input = len(superstep) == 1 and superstep[0].as_node == INPUT
                source = "input" if as_input else "update"  # an input: its checkpoint first
                loop.sink.submit(CommitBatch(audit=[mark(tenant, loop.run_id, loop.step, source)]))
            loop.sink.flush()
        except BaseException as exc:
            error = exc
            raise
        finally:
            loop.close(error)
        return checkpoint_config(tenant, loop.run_id, loop.step)  # a past one's edit: a fork

    async def aupdate_state(
        self,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        graph = as_graph(self)
        return graph.update_state(config, values, as_node, task_id)

    async def abulk_update_state(
        self,
        config: Mapping[str, Any],
        supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]],
    ) -> dict[str, Any]:
        graph = as_graph(self)
        return graph.bulk_update_state(config, supersteps)

    async def aget_state(
        self, config: Mapping[str, Any], *, subgraphs: bool = False
    ) -> StateSnapshot:
        graph = as_graph(self)
        return graph.get_state(config, subgraphs=subgraphs)

    async def aget_state_history(
        self,
        config: Mapping[str, Any],
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        graph = as_graph(self)  # the sync listing's, a subgraph's by its namespace too
        for snapshot in graph.get_state_history(config, filter=filter, before=before, limit=limit):
            yield snapshot


def history(
    graph: CompiledGraph,
    config: Mapping[str, Any],
    *,
    filter: Mapping[str, Any] | None = None,
    before: Mapping[str, Any] | None = None,
    limit: int | None = None,
) -> Iterator[StateSnapshot]:
    """Snapshots newest first, from ``before``'s step (exclusive) or the newest, keeping
    those whose metadata holds every ``filter`` item; at most ``limit``. A thread that was
    replayed or edited in the past lists its forks' checkpoints too (``branches``)."""
    tenant, run_id = _ids(config, create=False)
    run = graph.store.get_run(tenant, run_id)
    if run is None:
        return
    base = {**config.get("configurable", {}), "thread_id": run_id, "tenant": tenant}
    base.pop("checkpoint_id", None)
    base.pop("step", None)
    # a fork's own config lists its run alone (its shared steps included), as before
    family = [] if travel.is_fork(run) else branches.family(graph.store, tenant, run)
    if len(family) > 1:
        found = _family_entries(graph, tenant, family, before)
    else:
        found = _linear(graph, tenant, run, _older(before, tenant, run_id))
    n = 0
    for entry in found:
        if limit is not None and n >= limit:
            return
        snapshot = branches.entry_snapshot(graph, tenant, entry, base)
        if filter and any(snapshot.metadata.get(k) != v for k, v in filter.items()):
            continue
        n += 1
        yield snapshot


def _older(before: Mapping[str, Any] | None, tenant: str, run_id: str) -> Point | None:
    """The point ``before`` names in a run's own history (None: none)."""
    if before is None:
        return None
    at = travel.requested_step(before, tenant, run_id)
    if at is None:
        return None
    return (at, not travel.names_input_checkpoint(before, tenant, run_id))


def _family_entries(
    graph: CompiledGraph,
    tenant: str,
    family: list[branches.Branch],
    before: Mapping[str, Any] | None,
) -> Iterator[branches.Entry]:
    """Every branch's entries, newest branch first; after ``before``'s entry when given."""
    cid = (before or {}).get("configurable", {}).get("checkpoint_id") if before else None
    root = next(b.run for b in family if b.shared is None)
    if before is not None and not cid:  # wayline's ``step``: the root's own steps
        yield from _linear(graph, tenant, root, _older(before, tenant, root.run_id))
        return
    seen = cid is None
    for branch in family:
        for entry in branches.branch_entries(graph.store, tenant, branch):
            if seen:
                yield entry
            elif entry.checkpoint_id(tenant) == cid:
                seen = True
    if not seen:
        raise TimeTravelError(
            f"before={{'checkpoint_id': {cid!r}}} is not a checkpoint of thread "
            f"{root.run_id!r}; take ids from its get_state_history"
        )


def _linear(
    graph: CompiledGraph, tenant: str, run: RunRecord, older: Point | None
) -> Iterator[branches.Entry]:
    """One run's own entries, newest first, older than ``older``."""
    branch = branches.Branch(run, None, None)
    for point in listed(graph.store, tenant, run, older):
        yield branches.Entry(branch, point, False, False)


def _copy(
    graph: CompiledGraph, config: Mapping[str, Any], tenant: str, run_id: str
) -> dict[str, Any]:
    """``update_state(config, None, as_node="__copy__")``: a fork of the run at the step
    ``config`` names (its latest without one) that writes nothing, as LangGraph's copy of a
    checkpoint (``metadata["source"] == "fork"``); returns the fork's config."""
    run = graph.store.get_run(tenant, run_id)
    if run is None:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r} to copy a checkpoint of")
    step = travel.requested_step(config, tenant, run_id)
    step = run.step if step is None else step
    fork_id = travel.fork_id_for(graph.store, tenant, run_id, step)
    token = travel.create_fork(
        graph.store, tenant, run_id, step, new_run_id=fork_id, owner=default_owner()
    )
    try:
        batch = CommitBatch(audit=[mark(tenant, fork_id, step, "fork")])
        graph.store.commit(tenant, fork_id, token, batch)
    finally:
        graph.store.release(tenant, fork_id, token)
    return checkpoint_config(tenant, fork_id, step)


def _input_steps(steps: list[list[StateUpdate]]) -> list[list[StateUpdate]]:
    """LangGraph spells a run's input as two checkpoints (``__input__`` records it, then
    ``__start__`` passes it on to the state); wayline commits both as its one input step
    (routed from START). So an update as ``__start__`` is written as the input, and one that
    follows an ``__input__`` superstep replaces it: what START wrote is what the state holds,
    as LangGraph's history after ``invoke`` shows."""
    out: list[list[StateUpdate]] = []
    for superstep in steps:
        if len(superstep) == 1 and superstep[0].as_node == START_NODE:
            as_input = superstep[0]._replace(as_node=INPUT)
            previous = out[-1] if out else []
            if len(previous) == 1 and previous[0].as_node == INPUT:
                out[-1] = [as_input]
                continue
            superstep = [as_input]
        out.append(superstep)
    return out


def _check_superstep(graph: CompiledGraph, updates: Sequence[StateUpdate]) -> None:
    """Refuse, before anything is written, what LangGraph refuses."""
    for u in updates:
        if u.as_node in _NOT_NODES and len(updates) > 1:
            raise InvalidUpdateError(
                f"update_state(as_node={u.as_node!r}) cannot share a superstep with other "
                "updates: give it a superstep of its own"
            )
        if u.as_node == END and u.values is not None:
            raise InvalidUpdateError(
                "update_state(as_node='__end__') takes no values: it ends the waiting step's "
                "tasks; write values with another as_node first"
            )
        if u.as_node not in (None, INPUT, END) and u.as_node not in graph.nodes:
            raise UnknownNodeError(
                f"update_state(as_node={u.as_node!r}): nodes are {sorted(graph.nodes)}"
            )
        values = u.values.update if isinstance(u.values, Command) else u.values
        if values is not None:
            graph.schema.check_keys(graph.schema.input_to_dict(values), "update_state")
    if len(updates) > 1 and any(u.as_node is None for u in updates):
        raise InvalidUpdateError(
            "several updates in one superstep need an as_node each, so each writes as a node"
        )


def _last_writer(graph: CompiledGraph, loop: Any) -> str | None:
    """LangGraph's ``as_node`` when none is given: the one node that ran in the run's last
    step, so the update routes by that node's edges as if it had returned it; None (the
    update goes on to the step's next tasks) when the step ran no node or several, the node
    feeds a waiting edge, or a deferred node waits."""
    ran = {
        r.name
        for r in step_results(graph, loop.tenant_id, loop.run_id, loop.step).values()
        if r.name in graph.nodes
    }
    if len(ran) != 1:
        return None
    node = ran.pop()
    # a waiting edge's target and a deferred node stay next whoever writes (LangGraph's
    # barrier is not cleared by a step), so the step's next tasks are kept as they are
    held = any(graph.nodes[t.name].defer for t in loop.next_tasks if t.name in graph.nodes)
    return None if graph.joins_from.get(node) or held else node
