"""Stream modes, as LangGraph names them: ``values``, ``updates``, ``custom``,
``messages``, ``tasks``, ``checkpoints``, ``debug``.

The run loop yields ``(mode, chunk)`` for what it does itself (a committed step's values,
each task's update, task starts and results). What a node emits while it runs (``custom``
chunks from ``get_stream_writer()``, chat-model tokens for ``messages``, every event of a
subgraph) goes into an ``EventBus``; the sync driver waits on that bus while the step's
tasks run, so those chunks reach the caller as they are emitted, not when the step ends.
"""

from __future__ import annotations

import datetime as dt
import queue
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from wayline.errors import WaylineError
from wayline.graph.algo import PUSH
from wayline.graph.input_checkpoint import input_event
from wayline.graph.lg_shape import checkpoint_metadata, task_result_writes
from wayline.graph.run_config import checkpoint_config
from wayline.graph.schema import ROOT
from wayline.graph.tasks import defer_split
from wayline.ids import derive_id

__all__ = [
    "CHECKPOINT_SRC",
    "PAUSED",
    "RESUMED",
    "STREAM_MODES",
    "AtStep",
    "EventBus",
    "Formatter",
    "TaskDone",
    "parse_modes",
]

STREAM_MODES = ("values", "updates", "custom", "messages", "tasks", "checkpoints", "debug")
RESUMED = "__resumed__"
"""The state a continued run starts from (LangGraph's first ``values`` chunk on resume);
not a committed step, so no ``checkpoints`` chunk."""
JOIN_PREFIX = "__join__:"
"""How a waiting edge's barrier channel is keyed (``__join__:<a>+<b>:<node>``)."""

PAUSED = ("updates", {"__interrupt__": ()})
"""What a breakpoint streams, as LangGraph: an interrupt with no question."""
NAMESPACED = "__ns__"
"""The mode under which the loop passes on a bus event: chunk is (namespace, mode, chunk)."""
CHECKPOINT_SRC = "checkpoints_src"
"""A committed step (``checkpoint_events``), shown by the ``checkpoints`` and ``debug`` modes."""


class AtStep(dict[str, Any]):
    """A subgraph's ``tasks`` chunk, carrying the step of the subgraph's own run that the
    task belongs to (``debug`` shows it, as LangGraph: a subgraph's steps are its own)."""

    __slots__ = ("step",)

    def __init__(self, chunk: dict[str, Any], step: int) -> None:
        super().__init__(chunk)
        self.step = step


class TaskDone:
    """Put on the bus by a task's thread when the task has finished."""

    __slots__ = ("error", "outcome")

    def __init__(self, outcome: Any, error: BaseException | None) -> None:
        self.outcome = outcome
        self.error = error


class EventBus:
    """Where nodes (and subgraphs) put stream events while they run; thread-safe."""

    def __init__(self, modes: set[str], subgraphs: bool) -> None:
        self.modes = modes
        self.subgraphs = subgraphs
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.waker: Callable[[], None] | None = None
        """Called after each put: the async driver's way to wake up (thread-safe)."""

    def __call__(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        if mode == CHECKPOINT_SRC:  # a subgraph's committed step
            wanted = bool(self.modes & {"checkpoints", "debug"})
        else:
            wanted = mode in self.modes or (mode == "tasks" and "debug" in self.modes)
        if wanted:
            if namespace and not self.subgraphs:
                return
            self.queue.put((namespace, mode, chunk))
            if self.waker is not None:
                self.waker()

    def put_own(self, event: tuple[str, Any]) -> None:
        """An event of the streamed graph's own loop, passed on in the order it comes
        among what the tasks emit (whatever the modes: the formatter reads them all)."""
        self.queue.put(((), *event))
        if self.waker is not None:
            self.waker()

    @property
    def wants_tasks(self) -> bool:
        return bool(self.modes & {"tasks", "debug"})

    def drain(self) -> Iterator[tuple[str, Any]]:
        """Events put so far, without waiting (the async driver, after each task)."""
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            if not isinstance(item, TaskDone):
                yield (NAMESPACED, item)


def parse_modes(stream_mode: str | Sequence[str]) -> tuple[set[str], bool]:
    single = isinstance(stream_mode, str)
    modes = {stream_mode} if isinstance(stream_mode, str) else set(stream_mode)
    unknown = modes - set(STREAM_MODES)
    if unknown:
        raise WaylineError(
            f"unsupported stream_mode {sorted(unknown)}; supported: {list(STREAM_MODES)}"
        )
    return modes, single


class Formatter:
    """Turns the loop's events into what ``stream`` yields for the modes asked."""

    def __init__(
        self,
        modes: set[str],
        single: bool,
        subgraphs: bool,
        output: Callable[[dict[str, Any]], dict[str, Any]],
        step: Callable[[], int],
    ) -> None:
        self.modes = modes
        self.single = single
        self.subgraphs = subgraphs
        self.output = output
        """What a ``values`` chunk shows of the state (its own keys)."""
        self.step = step
        self.wrote = True
        """Whether the step since the last ``values`` chunk wrote any state (LangGraph
        sends no ``values`` chunk for a step that changed nothing)."""
        self.checkpointed = True
        """The graph was compiled with a checkpointer. Without one LangGraph saves no
        checkpoint, so ``checkpoints`` (and ``debug``'s checkpoint events) stream none:
        wayline's private in-memory store is an implementation detail, not a checkpoint."""

    @property
    def wants_checkpoints(self) -> bool:
        return self.checkpointed and bool(self.modes & {"checkpoints", "debug"})

    def __call__(self, mode: str, chunk: Any) -> Iterator[Any]:
        namespace: tuple[str, ...] = ()
        if mode == NAMESPACED:
            namespace, mode, chunk = chunk
            if mode == CHECKPOINT_SRC and not self.checkpointed:
                return
        if mode == RESUMED:
            mode = "values"
        if mode == CHECKPOINT_SRC:  # a committed step, described for these two modes
            if "checkpoints" in self.modes:
                yield self._shape(namespace, "checkpoints", chunk)
            if "debug" in self.modes:
                yield self._shape(namespace, "debug", self._debug("checkpoint", chunk))
            return
        step: int | None = None
        if isinstance(chunk, AtStep):  # a subgraph's task: the step is its run's
            step, chunk = chunk.step, dict(chunk)
        if mode == "tasks" and "debug" in self.modes:
            kind = "task_result" if "result" in chunk or "error" in chunk else "task"
            yield self._shape(namespace, "debug", self._debug(kind, chunk, step))
        if not namespace and mode == "updates":
            self.wrote = self.wrote or any(v not in (None, {}) for v in chunk.values())
        if not namespace and mode == "values":
            wrote, self.wrote = self.wrote, False
            if not wrote and "__interrupt__" not in chunk:
                return
        if mode not in self.modes:
            return
        if mode == "updates":
            chunk = {k: (None if v == {} else v) for k, v in chunk.items()}
        elif mode == "values" and ROOT in chunk and "__interrupt__" not in chunk:
            chunk = chunk[ROOT]  # a single-value state streams the value
        elif mode == "values" and not namespace:
            chunk = self.output(chunk)
        yield self._shape(namespace, mode, chunk)

    def _shape(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> Any:
        if self.subgraphs:
            return (namespace, chunk) if self.single else (namespace, mode, chunk)
        return chunk if self.single else (mode, chunk)

    def _debug(self, kind: str, payload: Any, step: int | None = None) -> dict[str, Any]:
        if kind == "checkpoint":
            step = payload.get("metadata", {}).get("step")
        return {
            "step": step if step is not None else self.step(),
            "timestamp": dt.datetime.now(dt.UTC).isoformat(),
            "type": kind,
            "payload": payload,
        }


def checkpoint_events(
    loop: Any, values: dict[str, Any], state_of: Callable[[str, str], Any] | None = None
) -> list[dict[str, Any]]:
    """A committed step as LangGraph's ``checkpoints`` mode describes one; an input step
    is two, as LangGraph's: the input checkpoint before it, then the input applied.
    ``state_of`` (node, task id) gives a task's ``state`` (``subgraph.task_state``)."""
    nxt = defer_split(loop.next_tasks, loop.graph.nodes)[0]  # held: not next

    def task_id(t: Any) -> str:
        return derive_id(loop.tenant_id, loop.run_id, loop.step + 1, *t.path)

    parent: dict[str, Any] | None = checkpoint_config(loop.tenant_id, loop.run_id, loop.step - 1)
    out = []
    if loop.input_at == loop.step:
        out.append(input_event(loop))
        parent = out[0]["config"]
    if loop.durability == "exit":  # as LangGraph's: no checkpoint was written before these
        for event in out:
            event["parent_config"] = None
        parent = None
    out.append(
        {
            # the config get_state_history gives the same checkpoint
            "config": checkpoint_config(loop.tenant_id, loop.run_id, loop.step),
            "parent_config": parent if loop.step > 0 or out else None,
            "values": values,
            "metadata": checkpoint_metadata("loop", loop.step),
            "next": [t.name for t in nxt],
            "tasks": [
                {
                    "id": (tid := task_id(t)),
                    "name": t.name,
                    "interrupts": (),
                    "state": None if state_of is None else state_of(t.name, tid),
                }
                for t in nxt
            ],
        }
    )
    return out


def task_start(task: Any, node_input: Any, barriers: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": task.id,
        "name": task.spec.name,
        "input": node_input,
        "triggers": task_triggers(task.spec.name, task.spec.path, barriers),
    }


def task_triggers(name: str, path: Sequence[Any], barriers: Mapping[str, Any]) -> tuple[str, ...]:
    """A task's triggers as LangGraph names them: a ``Send`` is ``("__pregel_push",)``; a
    node is every channel it subscribes to, sorted, whichever fired: ``branch:to:<node>``
    and a ``join:<a>+<b>:<node>`` per waiting edge into it (``__join__:...`` here)."""
    if path and path[0] == PUSH:
        return ("__pregel_push",)
    joins = [
        "join:" + key[len(JOIN_PREFIX) :]
        for key, barrier in barriers.items()
        if key == f"{JOIN_PREFIX}{'+'.join(barrier.sources)}:{name}"
    ]
    return tuple(sorted([f"branch:to:{name}", *joins]))


def task_result(outcome: Any) -> dict[str, Any]:
    result = None
    if outcome.result is not None:
        result = task_result_writes(outcome.result.writes)
    return {
        "id": outcome.task.id,
        "name": outcome.task.spec.name,
        "error": None if outcome.error is None else repr(outcome.error),
        "result": result,
        "interrupts": [i for _, i in outcome.interrupts],
    }
