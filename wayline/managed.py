"""Managed state keys, as ``langgraph.managed``: a key annotated ``RemainingSteps`` or
``IsLastStep`` is not stored; each node reads it computed from the run's step budget
(``config["recursion_limit"]``), so an agent can stop before the limit cuts it off."""

from __future__ import annotations

from typing import Annotated

__all__ = ["IsLastStep", "ManagedValue", "RemainingSteps"]


class ManagedValue:
    """The marker a managed key's annotation carries; ``kind`` names what it computes."""

    kind = ""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"ManagedValue({self.kind!r})"


REMAINING = ManagedValue("remaining_steps")
LAST = ManagedValue("is_last_step")

RemainingSteps = Annotated[int, REMAINING]
"""How many supersteps the run may still take before ``GraphRecursionError``."""
IsLastStep = Annotated[bool, LAST]
"""True in the last superstep the run's budget allows."""


def managed_value(kind: str, left: int) -> int | bool:
    """The value of a managed key for a step with ``left`` supersteps left, itself
    included; LangGraph's figures (``RemainingSteps`` counts the steps after this one,
    ``IsLastStep`` is true one step before the last)."""
    remaining = left - 1
    return remaining == 1 if kind == LAST.kind else remaining
