"""A LlamaIndex run's journal on wayline's store: one delta row per control-loop tick.

Each tick the control loop processes (a step's completion with the events it emitted, an
event sent in, a timeout) is one step of the wayline run, committed under the run's fencing
token before the loop acts on it. A fresh process folds the ticks through LlamaIndex's own
reducer (the fold ``BasicRuntime.restore`` does) and continues from there: a step whose
completion is in the journal does not run again; one that was mid-execution is rewound by
the session marker and runs again from its top, as LlamaIndex documents.

Row payload (wayline's codec, msgpack): ``{"tick": str, "state": dict | None, "answered":
str | None}``. ``tick`` is the tick as the workflow's serializer writes it (JSON; no pickle:
a ``PickleSerializer`` is refused); ``state`` is the context's state store when it changed
(LlamaIndex keeps it outside the ticks); ``answered`` names the interrupt whose decision
this tick delivered, so a resume never delivers it twice.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from workflows.context.context import Context
from workflows.context.context_types import SerializedContext
from workflows.context.serializers import BaseSerializer, PickleSerializer
from workflows.runtime.control_loop.reduce import _reduce_tick
from workflows.runtime.types.internal_state import BrokerState
from workflows.runtime.types.results import AddWaiter, DeleteWaiter
from workflows.runtime.types.ticks import TickStepResult, WorkflowTick, WorkflowTickAdapter
from workflows.workflow import Workflow

from wayline.codec import default_codec
from wayline.errors import ConfigError, CorruptionError
from wayline.store.base import Store
from wayline.store.records import DeltaRecord

__all__ = ["Journal", "check_serializer", "encode_tick", "fold", "load_journal"]


def check_serializer(serializer: BaseSerializer, run_id: str) -> None:
    """A journal must be readable without executing code: no pickle."""
    if isinstance(serializer, PickleSerializer):
        raise ConfigError(
            f"run {run_id!r}: wayline.llamaindex stores ticks with the workflow's serializer, "
            "and PickleSerializer would unpickle on every resume; use JsonSerializer (the "
            "default) and make the events pydantic-serializable"
        )


@dataclasses.dataclass
class Journal:
    """What the store holds for a run, decoded: its ticks, state and delivered answers."""

    ticks: list[WorkflowTick] = dataclasses.field(default_factory=list)
    state: dict[str, Any] | None = None
    answered: set[str] = dataclasses.field(default_factory=set)
    waiters: dict[str, tuple[str, AddWaiter[Any]]] = dataclasses.field(default_factory=dict)
    """Waiters added by a step and not resolved yet (``wait_for_event``): id -> (step,
    waiter)."""
    last_stamp: float = 0.0
    """The newest clock reading the journal holds (``get_now`` never goes below it)."""

    @property
    def seq(self) -> int:
        """The number of ticks: the next tick's step number."""
        return len(self.ticks)

    def note(self, tick: WorkflowTick) -> None:
        self.ticks.append(tick)
        stamp = getattr(tick, "stamped_at", None)
        if isinstance(stamp, int | float):
            self.last_stamp = max(self.last_stamp, float(stamp))
        if isinstance(tick, TickStepResult):
            for result in tick.result:
                if isinstance(result, AddWaiter):
                    self.waiters[result.waiter_id] = (str(tick.step_id), result)
                elif isinstance(result, DeleteWaiter):
                    self.waiters.pop(result.waiter_id, None)


def encode_tick(
    serializer: BaseSerializer,
    tick: WorkflowTick,
    step: int,
    state: dict[str, Any] | None,
    answered: str | None,
) -> DeltaRecord:
    data = serializer.serialize(tick)
    payload = default_codec.dumps({"tick": data, "state": state, "answered": answered})
    return DeltaRecord(step=step, payload=payload, channels=(("tick", len(data)),))


def load_journal(
    store: Store, serializer: BaseSerializer, tenant: str, run_id: str, through: int
) -> Journal:
    """Every tick committed for the run, in order (steps 0..through)."""
    journal = Journal()
    for row in store.load_deltas(tenant, run_id, -1, through):
        if row.step != journal.seq:
            raise CorruptionError(
                f"run {run_id!r}: its journal has no tick {journal.seq} (next row is step "
                f"{row.step}); the run cannot be resumed safely: export it and inspect"
            )
        body = default_codec.loads(row.payload)
        with serializer.validation_context():
            tick = WorkflowTickAdapter.validate_python(serializer.deserialize(body["tick"]))
        journal.note(tick)
        if body.get("state") is not None:
            journal.state = body["state"]
        if body.get("answered"):
            journal.answered.add(str(body["answered"]))
    return journal


def fold(workflow: Workflow, journal: Journal, serializer: BaseSerializer, run_id: str) -> Context:
    """A context ready to continue the run: the journal folded through LlamaIndex's reducer."""
    state = BrokerState.from_workflow(workflow)
    for tick in journal.ticks:
        state, _ = _reduce_tick(tick, state, time.time(), run_id=run_id)
    restored: SerializedContext = state.to_serialized(serializer)
    if journal.state is not None:
        restored.state = journal.state
    return Context.from_dict(workflow, restored.model_dump(mode="python"), serializer=serializer)
