"""LangGraph's input checkpoint, read from wayline's input step.

LangGraph writes two checkpoints for an invocation's input: one before it (``source:
"input"``: the state as it was, ``next == ("__start__",)``, a ``__start__`` task whose
result is the input), then the input applied by START (``source: "loop"``). wayline commits
the input and START's routing as one step, and stores nothing more: the checkpoint before
an input step ``k`` is read from the rows already there (step ``k - 1``'s state, or none;
the input is what ``__start__`` wrote in step ``k``'s delta). Its metadata step is
``k - 1`` (-1 before the first input, as LangGraph's), its id is
``travel.input_checkpoint_id``, and it is listed before the input step in the history, the
checkpointer's ``list`` and the ``checkpoints``/``debug`` streams.

With ``durability="exit"`` LangGraph writes one checkpoint an invocation, at its end; wayline
commits every step, so the history lists the last step each invocation committed (an
invocation holds a lease of its own: a new fencing token starts the next one) and the other
steps stay addressable by ``configurable.step``. A subgraph's invocation that finished it is
not listed (LangGraph writes none for it) unless the subgraph has a thread of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from wayline.errors import TimeTravelError
from wayline.graph import travel
from wayline.graph.algo import PULL, TaskResult, values_of
from wayline.graph.checkpoint import BlobCache, decode_results
from wayline.graph.lg_shape import checkpoint_metadata, snapshot_task_result
from wayline.graph.run_config import checkpoint_config
from wayline.graph.schema import ROOT
from wayline.graph.snapshot_source import step_source, step_time
from wayline.graph.types import START, PregelTask, ReadInfo, StateSnapshot
from wayline.ids import derive_id
from wayline.interop.lg_paths import lg_path
from wayline.store.base import Store
from wayline.store.records import RunRecord

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

INPUT_NODE = "__input__"
"""The writer of an input written by ``update_state(..., as_node="__input__")``."""

__all__ = [
    "Point",
    "input_config",
    "input_event",
    "input_snapshot",
    "is_input_step",
    "listed",
    "listed_parent",
    "step_results",
    "update_target",
]

Point = tuple[int, bool]
"""A listed checkpoint: (step k, False) is the input checkpoint before input step k, (k,
True) the step itself; they order as they were made."""


def is_input_step(store: Store, tenant: str, run_id: str, step: int) -> bool:
    """Whether step ``step`` is an input step (START wrote it): an input checkpoint comes
    before it."""
    return step >= 0 and step_source(store, tenant, run_id, step) == "input"


def input_config(tenant: str, run_id: str, step: int) -> dict[str, Any]:
    """The config of the input checkpoint before input step ``step``."""
    cfg = checkpoint_config(tenant, run_id, step)
    cfg["configurable"]["checkpoint_id"] = travel.input_checkpoint_id(tenant, run_id, step)
    return cfg


def input_snapshot(graph: CompiledGraph, tenant: str, run: RunRecord, step: int) -> StateSnapshot:
    """The input checkpoint before input step ``step`` of ``run``: the state before the
    input, ``__start__`` next, its task's result the input."""
    run_id = run.run_id
    values, info = _before(graph, tenant, run_id, step)
    if info is None:
        info = ReadInfo("running", run.graph_name, run.graph_version, None, 0, 0)
    task = PregelTask(
        derive_id(tenant, run_id, step, PULL, START),
        START,
        lg_path((PULL, START)),
        result=_input_of(graph, tenant, run_id, step),
    )
    return StateSnapshot(
        values=values,
        next=(START,),
        config=input_config(tenant, run_id, step),
        metadata=checkpoint_metadata("input", step - 1),
        created_at=step_time(graph.store, tenant, run_id, step),  # read from the input step
        parent_config=checkpoint_config(tenant, run_id, step - 1) if step > 0 else None,
        tasks=(task,),
        interrupts=(),
        read_info=info,
    )


def _before(
    graph: CompiledGraph, tenant: str, run_id: str, step: int
) -> tuple[Any, ReadInfo | None]:
    """The state before input step ``step`` (step ``step - 1``'s, or the empty state) and
    what reading it cost."""
    if step <= 0:
        return graph.schema.present(values_of(graph.new_channels())), None
    conf = {"thread_id": run_id, "tenant": tenant, "step": step - 1}
    before = graph._state({"configurable": conf})
    return before.values, before.read_info


def step_results(
    graph: CompiledGraph, tenant: str, run_id: str, step: int
) -> dict[str, TaskResult]:
    """The results committed in step ``step``, by task id (a past checkpoint's tasks show
    them, as LangGraph's)."""
    resolve = BlobCache(graph.store, tenant)
    out: dict[str, TaskResult] = {}
    for delta in graph.store.load_deltas(tenant, run_id, step - 1, step):
        for result in decode_results(graph.codec, delta.payload, resolve, ("deltas", step)):
            out[derive_id(tenant, run_id, step, *result.path)] = result
    return out


def _input_of(graph: CompiledGraph, tenant: str, run_id: str, step: int) -> Any:
    """What START wrote in input step ``step`` (routing left out): the input (a
    single-value state's: the value)."""
    out: dict[str, Any] = {}
    for result in step_results(graph, tenant, run_id, step).values():
        if result.name in (START, INPUT_NODE):  # run, or written by update_state
            if graph.schema.kind == "root":
                return snapshot_task_result(result.writes, ROOT)
            out.update(w for w in result.writes if not w[0].startswith("__"))
    return out


def listed(store: Store, tenant: str, run: RunRecord, before: Point | None) -> Iterator[Point]:
    """The checkpoints a history lists, newest first, older than ``before``: every step
    and the input checkpoint before each input step; with durability "exit", the last step
    of each invocation only."""
    top = run.step if before is None else before[0]
    if run.durability == "exit":
        ends = _invocation_ends(store, tenant, run, run.step)
        if run.status == "done" and _nested(run.run_id):
            ends.discard(run.step)
        for step in range(top, -1, -1):
            if step in ends and (before is None or (step, True) < before):
                yield (step, True)
        return
    for step in range(top, -1, -1):
        if before is None or (step, True) < before:
            yield (step, True)
        if (before is None or (step, False) < before) and is_input_step(
            store, tenant, run.run_id, step
        ):
            yield (step, False)


def _nested(run_id: str) -> bool:
    """Whether a run is a subgraph's without a thread of its own (``<parent>::<node>:<task
    id>``, not ``compile(checkpointer=True)``'s ``<parent>::<node>``): with durability
    "exit" LangGraph checkpoints such a subgraph only when it stops early (an interrupt, an
    error), so the invocation that finished it is not listed."""
    return any(":" in segment for segment in run_id.split("::")[1:])


def listed_parent(store: Store, tenant: str, run: RunRecord, step: int) -> dict[str, Any] | None:
    """With durability "exit": the parent of step ``step`` as listed, the last step of the
    invocation before (None for the first)."""
    earlier = [end for end in _invocation_ends(store, tenant, run, step) if end < step]
    return checkpoint_config(tenant, run.run_id, max(earlier)) if earlier else None


def _invocation_ends(store: Store, tenant: str, run: RunRecord, upto: int) -> set[int]:
    """The last step each invocation committed up to step ``upto``: a step the next one's
    lease did not (and ``upto`` itself); reads no delta after ``upto``."""
    deltas = store.load_deltas(tenant, run.run_id, -1, upto)
    ends = {a.step for a, b in itertools.pairwise(deltas) if a.fencing_token != b.fencing_token}
    if deltas:
        ends.add(deltas[-1].step)
    return ends


def input_event(loop: Any) -> dict[str, Any]:
    """The ``checkpoints`` stream's event of the input checkpoint before the input step
    ``loop`` just committed (durable: an input step is flushed in every mode)."""
    step = loop.step
    tenant, run_id = loop.tenant_id, loop.run_id
    return {
        "config": input_config(tenant, run_id, step),
        "parent_config": checkpoint_config(tenant, run_id, step - 1) if step > 0 else None,
        "values": _before(loop.graph, tenant, run_id, step)[0],
        "metadata": checkpoint_metadata("input", step - 1),
        "next": [START],
        "tasks": [
            {
                "id": derive_id(tenant, run_id, step, PULL, START),
                "name": START,
                "interrupts": (),
                "state": None,
            }
        ],
    }


def update_target(
    store: Store, config: Mapping[str, Any], tenant: str, run_id: str
) -> Mapping[str, Any]:
    """Where ``update_state(config, ...)`` writes when ``config`` names an input checkpoint:
    on the state before the input, as LangGraph's. Before a later input that is step
    ``k - 1`` (the edit forks there); before the first, no step holds it, so the edit starts
    a new run, ``<thread>@-1`` (then ``@-1.2``, ...), from the empty state. Any other config
    is returned as given."""
    if not travel.names_input_checkpoint(config, tenant, run_id):
        return config
    step = travel.requested_step(config, tenant, run_id)
    conf = dict(config.get("configurable") or {})
    conf.pop("checkpoint_id", None)
    if step:
        conf["checkpoint_id"] = travel.checkpoint_id(tenant, run_id, step - 1)
    else:
        conf["thread_id"] = travel.fork_id_for(store, tenant, run_id, -1)
    return {**config, "configurable": conf}


def input_target(
    store: Store, config: Mapping[str, Any], tenant: str, run_id: str
) -> Mapping[str, Any]:
    """Where an invocation with new input starts when ``config`` names an input checkpoint:
    before the input that followed it, as LangGraph's (the new input replaces it), by
    ``update_target``'s rule. Any other config, a subgraph's included, is returned as given;
    an id of no checkpoint of this run is refused later, where every config's is."""
    conf = config.get("configurable") or {}
    if not conf.get("checkpoint_id") or conf.get("checkpoint_ns"):
        return config
    try:
        return update_target(store, config, tenant, run_id)
    except TimeTravelError:
        return config
