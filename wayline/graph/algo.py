"""The superstep fold: pure functions over plain data, shared by execution and replay.

A step's tasks each produce a ``TaskResult`` (their writes, including routing writes).
``apply_step`` folds them into the channels in one defined order and returns the tasks of
the next step. Execution calls it after running the nodes; reconstruction calls it on the
stored delta. It is the same function with the same batches, which is what makes replay
exact even for reducers whose result depends on how writes are grouped.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from wayline.errors import WaylineError
from wayline.graph.channels import MISSING, Barrier, Channel
from wayline.graph.timeouts import TimeoutPolicy
from wayline.graph.types import END, Send
from wayline.ids import derive_id
from wayline.interop.lg_paths import PULL, PUSH

__all__ = [
    "PULL",
    "PUSH",
    "ROUTE",
    "SEND",
    "TaskResult",
    "TaskSpec",
    "apply_step",
    "derive_id",
    "fold_writes",
    "snapshot_order",
    "values_of",
    "with_pending",
]

ROUTE = "__route__"
"""A write to ROUTE names a node that runs next step (edges, conditional edges, goto)."""
SEND = "__send__"
"""A write to SEND carries a ``Send``: a task with its own input next step."""


@dataclasses.dataclass(frozen=True, slots=True)
class TaskSpec:
    """A task to run: a node triggered by edges (PULL) or by a Send (PUSH, with ``arg``)."""

    name: str
    path: tuple[Any, ...]
    arg: Any = MISSING
    timeout: TimeoutPolicy | None = None
    """A Send's own timeout (``Send(..., timeout=)``): it bounds this task, not the node's."""

    def to_wire(self) -> list[Any]:
        wire = [self.name, list(self.path), None if self.arg is MISSING else self.arg]
        if self.timeout is not None:  # a fourth item only then: the rest read as before
            t = self.timeout
            wire.append([t.run_timeout, t.idle_timeout, t.refresh_on])
        return wire

    @classmethod
    def from_wire(cls, item: Sequence[Any]) -> TaskSpec:
        name, path, arg = item[:3]
        kind = path[0]
        timeout = TimeoutPolicy(*item[3]) if len(item) > 3 else None
        return cls(name, tuple(path), MISSING if kind == PULL else arg, timeout)


@dataclasses.dataclass(frozen=True, slots=True)
class TaskResult:
    """What one finished task wrote, routing included, in the order it wrote it."""

    name: str
    path: tuple[Any, ...]
    writes: tuple[tuple[str, Any], ...]


def fold_order(path: Sequence[Any]) -> tuple[Any, ...]:
    """PULL tasks by node name, then PUSH tasks in the order they were sent (as LangGraph)."""
    return (0, path[1], 0) if path[0] == PULL else (1, "", path[1])


def snapshot_order(specs: Iterable[TaskSpec], nodes: Iterable[str]) -> list[TaskSpec]:
    """``specs`` in the order LangGraph lists a checkpoint's tasks (``StateSnapshot.tasks``
    and ``next``): PUSH tasks in the order they were sent, then PULL tasks in the order the
    nodes were added. Only the listing: tasks run and fold in ``fold_order``."""
    rank = {name: i for i, name in enumerate(nodes)}
    return sorted(
        specs,
        key=lambda t: (
            (1, rank.get(t.path[1], len(rank)), 0) if t.path[0] == PULL else (0, 0, t.path[1])
        ),
    )


def apply_step(channels: Mapping[str, Channel], results: Iterable[TaskResult]) -> list[TaskSpec]:
    """Fold one step's results into ``channels`` (in place) and plan the next step.

    ``results`` must already be in fold order (``sorted_results``); the stored delta keeps
    them in that order, so replay folds identical batches.
    """
    return fold_writes(channels, itertools.chain.from_iterable(r.writes for r in results))


def fold_writes(
    channels: Mapping[str, Channel], writes: Iterable[tuple[str, Any]]
) -> list[TaskSpec]:
    """``apply_step`` over its results' writes, in the same order. A key's writes are one
    batch, so a step's writes split into parts that share no key fold the same way."""
    batches: dict[str, list[Any]] = {}
    routes: set[str] = set()
    sends: list[Send] = []
    for key, value in writes:
        if key == ROUTE:
            routes.add(value)
        elif key == SEND:
            sends.append(value)
        else:
            batches.setdefault(key, []).append(value)
    for key, values in batches.items():
        channels[key].update(values)
    for channel in channels.values():
        if type(channel) is Barrier and channel.complete():  # not an ABC isinstance: hot
            routes.add(channel.key.rsplit(":", 1)[-1])
            channel.consume()
    routes.discard(END)
    tasks = [_pull(name) for name in sorted(routes)]
    if sends:
        tasks.extend(TaskSpec(s.node, (PUSH, i), s.arg, s.timeout) for i, s in enumerate(sends))
    return tasks


@functools.lru_cache(maxsize=4096)
def _pull(name: str) -> TaskSpec:
    """The PULL task of a node: immutable, so every step that runs the node shares one."""
    return TaskSpec(name, (PULL, name))


def sorted_results(results: Iterable[TaskResult]) -> list[TaskResult]:
    return sorted(results, key=lambda r: fold_order(r.path))


def values_of(channels: Mapping[str, Channel]) -> dict[str, Any]:
    """The user-visible state: declared keys that hold a value, in declaration order."""
    return {
        k: c.get() for k, c in channels.items() if type(c) is not Barrier and c.value is not MISSING
    }


def with_pending(channels: Mapping[str, Channel], pending: Iterable[TaskResult]) -> dict[str, Any]:
    """The user-visible state with the writes of an unfinished step's finished tasks
    folded in (on copies; the committed channels are untouched), as LangGraph shows the
    state of an interrupted step."""
    done = sorted_results(pending)
    if not done:
        return values_of(channels)
    copies = {k: c.copy() for k, c in channels.items()}
    try:
        apply_step(copies, done)
    except WaylineError:  # the writes do not fold (the step failed on them): as committed
        return values_of(channels)
    return values_of(copies)
