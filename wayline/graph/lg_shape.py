"""The metadata dict of a checkpoint as LangGraph spells it (``get_state``, history, the
``checkpoints`` and ``debug`` streams, the checkpointer's reads): ``source``, ``step`` and
``parents`` (the checkpoint id of each graph above a subgraph's, by namespace; ``{}`` at
the root). wayline's own figures of a read are ``StateSnapshot.read_info``, not here, so a
snapshot compares equal to LangGraph's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["checkpoint_metadata"]


def checkpoint_metadata(
    source: str, step: int, parents: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A checkpoint's metadata: what made it (``input``, ``loop``, ``update``, ``fork``),
    its step and its parents' checkpoint ids."""
    return {"source": source, "step": step, "parents": dict(parents or {})}
