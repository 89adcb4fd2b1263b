"""``Overwrite``: a write that bypasses a reducer channel's reducer and sets its value.

As LangGraph's ``langgraph.types.Overwrite``: the typed form, or the JSON forms
``{"__overwrite__": value}`` and ``{"type": "__overwrite__", "value": value}``. One per
channel per superstep; a fold that meets one ignores the plain writes after it in the same
step (LangGraph's rule), so replaying the step's writes gives the same value.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, Literal

__all__ = ["OVERWRITE", "Overwrite", "overwrite_of"]

OVERWRITE: Final = "__overwrite__"


@dataclasses.dataclass(frozen=True, slots=True)
class Overwrite:
    """Write ``value`` to a reducer channel as it is, replacing what it held."""

    value: Any
    type: Literal["__overwrite__"] = OVERWRITE


def overwrite_of(value: Any) -> tuple[bool, Any]:
    """(whether ``value`` is an overwrite, the value it writes)."""
    if type(value) is Overwrite:
        return True, value.value
    if type(value) is dict:
        if len(value) == 1 and OVERWRITE in value:
            return True, value[OVERWRITE]
        if value.get("type") == OVERWRITE and "value" in value:
            return True, value["value"]
    return False, None
