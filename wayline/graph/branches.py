"""A thread's history across its forks, listed as LangGraph lists a thread's checkpoints.

In LangGraph a replay or an edit of a past checkpoint adds checkpoints to the same thread:
a branch whose first checkpoint's parent is the one it went back to, listed with the rest,
newest first. In wayline going back is a fork, a run of its own (``<run>@<step>``, then
``.2``, ...; ``wayline.graph.travel``), so the thread's history is the family of runs: the
root and every fork made from it or from one of its forks. Each fork contributes what it
added after the step it shares with its origin, and

- a replay (the fork ran on from the shared step) shows that step once more, copied, as
  LangGraph's ``source: "fork"`` checkpoint;
- an edit (``update_state`` on a past checkpoint: the fork's next step is the update)
  shows only the update, whose parent is the checkpoint it edited.

Branches are listed newest first (the run that committed last), each newest first, the
root's own checkpoints after its forks'. A subgraph's runs (``<run>::<ns>``) are not
branches of the thread. A thread without forks is listed as before (one query more).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from wayline.graph import travel
from wayline.graph.child_names import SEP
from wayline.graph.input_checkpoint import Point, input_config, input_snapshot, listed
from wayline.graph.run_config import checkpoint_config
from wayline.graph.snapshot_source import step_source
from wayline.graph.types import StateSnapshot
from wayline.store.base import Store
from wayline.store.records import RunRecord

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["Branch", "Entry", "branch_entries", "family", "thread_head"]

_MAX_BRANCHES = 10_000


class Branch(NamedTuple):
    """One run of a thread's family and where it joins its parent branch."""

    run: RunRecord
    shared: int | None
    """The last step it shares with the run it was forked from (None: the root)."""
    parent: dict[str, Any] | None
    """The config of the checkpoint its oldest listed entry hangs from (None: the root)."""


class Entry(NamedTuple):
    """One listed checkpoint: a point of a branch, and how it is shown."""

    branch: Branch
    point: Point
    as_fork: bool
    """The shared step shown again, as LangGraph's ``source: "fork"`` copy."""
    oldest: bool
    """The branch's oldest listed entry: its parent is in the branch it came from."""

    def checkpoint_id(self, tenant: str) -> str:
        step, own = self.point
        run_id = self.branch.run.run_id
        if own:
            return travel.checkpoint_id(tenant, run_id, step)
        return travel.input_checkpoint_id(tenant, run_id, step)


def thread_head(store: Store, tenant: str, run_id: str, conf: Mapping[str, Any]) -> str:
    """The run a thread's config addresses when it names no checkpoint: as LangGraph's
    latest checkpoint, the run of the family that committed last (the root when it has no
    forks: one indexed query). A config naming a checkpoint, a step or a fork, or a fork's
    own id, addresses that run."""
    if any(conf.get(k) not in (None, "") for k in ("checkpoint_id", "step", "fork_id")):
        return run_id
    prefix = f"{run_id}@"
    if not store.run_ids_with_prefix(tenant, prefix, limit=1):
        return run_id
    root = store.get_run(tenant, run_id)
    if root is None or travel.is_fork(root):
        return run_id
    return family(store, tenant, root)[0].run.run_id


def family(store: Store, tenant: str, root: RunRecord) -> list[Branch]:
    """The root and its forks (transitively), the branch that committed last first."""
    branches = [Branch(root, None, None)]
    prefix = f"{root.run_id}@"
    for run_id in store.run_ids_with_prefix(tenant, prefix, limit=_MAX_BRANCHES):
        if SEP in run_id:  # a fork's subgraph run: not a branch of this thread
            continue
        run = store.get_run(tenant, run_id)
        if run is None:
            continue
        origin = travel.load_origin(store, tenant, run_id)
        if origin is not None:
            parent = checkpoint_config(tenant, origin.run_id, origin.step)
            branches.append(Branch(run, origin.step, parent))
        elif run_id.removeprefix(prefix).split(".")[0] == "-1":  # an edit before the input
            branches.append(Branch(run, -1, input_config(tenant, root.run_id, 0)))
    if len(branches) > 1:
        branches.sort(key=lambda b: (b.run.updated_at, b.run.created_at), reverse=True)
    return branches


def branch_entries(store: Store, tenant: str, branch: Branch) -> Iterator[Entry]:
    """A branch's listed checkpoints, newest first (cheap: no state is read)."""
    points = listed(store, tenant, branch.run, None)
    if branch.shared is None:
        for point in points:
            yield Entry(branch, point, False, False)
        return
    shared = branch.shared
    added = [p for p in points if p[0] > shared]
    run_id = branch.run.run_id
    own_copy = shared >= 0 and step_source(store, tenant, run_id, shared) == "fork"
    replayed = (
        shared >= 0
        and not own_copy
        and (not added or step_source(store, tenant, run_id, shared + 1) not in ("update", "input"))
    )
    tail: list[tuple[Point, bool]] = [(p, False) for p in added]
    if own_copy or replayed:  # the shared step, shown again as the fork's copy
        tail.append(((shared, True), replayed))
    for i, (point, as_fork) in enumerate(tail):
        yield Entry(branch, point, as_fork, i == len(tail) - 1)


def entry_snapshot(
    graph: CompiledGraph, tenant: str, entry: Entry, base: Mapping[str, Any]
) -> StateSnapshot:
    """The snapshot an entry lists: its run's state at its point, relabelled where the
    thread's view differs from the run's (the fork copy, the branch's first parent)."""
    step, own = entry.point
    run = entry.branch.run
    if own:
        conf = {**base, "thread_id": run.run_id, "step": step}
        snapshot = graph.get_state({"configurable": conf})
    else:
        snapshot = input_snapshot(graph, tenant, run, step)
    changes: dict[str, Any] = {}
    if entry.as_fork:
        changes["metadata"] = {**snapshot.metadata, "source": "fork"}
    if entry.oldest and entry.branch.parent is not None:
        changes["parent_config"] = entry.branch.parent
    return dataclasses.replace(snapshot, **changes) if changes else snapshot
