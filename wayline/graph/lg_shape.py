"""The metadata dict of a checkpoint as LangGraph spells it (``get_state``, history, the
``checkpoints`` and ``debug`` streams, the checkpointer's reads): ``source``, ``step`` and
``parents`` (the checkpoint id of each graph above a subgraph's, by namespace; ``{}`` at
the root). wayline's own figures of a read are ``StateSnapshot.read_info``, not here, so a
snapshot compares equal to LangGraph's. A task's result (the ``tasks`` and ``debug`` streams,
``PregelTask.result``) is its writes by channel, as LangGraph folds them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["checkpoint_metadata", "snapshot_task_result", "task_result_writes"]


def checkpoint_metadata(
    source: str, step: int, parents: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A checkpoint's metadata: what made it (``input``, ``loop``, ``update``, ``fork``),
    its step and its parents' checkpoint ids."""
    return {"source": source, "step": step, "parents": dict(parents or {})}


WRITES = "$writes"
"""The key LangGraph gathers a task's several writes to one channel under."""


def task_result_writes(writes: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """A task's writes by channel, LangGraph's way: one write is ``{channel: value}``, several
    to one channel are ``{channel: {"$writes": [first, second, ...]}}`` in write order.
    wayline's own keys (``__...``) are left out."""
    return _gathered((c, v) for c, v in writes if not c.startswith("__"))


def snapshot_task_result(writes: Iterable[tuple[str, Any]], single: str | None = None) -> Any:
    """``PregelTask.result`` of a task that finished: its writes by channel, or, for a
    single-value state (``StateGraph(Annotated[list, add])``, its one channel ``single``),
    what it wrote there, unwrapped (``None`` if it wrote nothing there), as LangGraph's."""
    if single is None:
        return task_result_writes(writes)
    return _gathered((c, v) for c, v in writes if c == single).get(single)


def _gathered(writes: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for channel, value in writes:
        existing = result.get(channel)
        if existing is None:  # LangGraph's test: a None first write is replaced
            result[channel] = value
            continue
        if isinstance(existing, dict) and isinstance(existing.get(WRITES), list):
            existing[WRITES].append(value)
        else:
            result[channel] = {WRITES: [existing, value]}
    return result
