"""Data classes: what kind of data a channel holds, and what an erased value reads as.

``Annotated[list[Msg], operator.add, Classified("pii")]`` labels a state key; unlabelled
keys are class ``"default"``. The label is recorded with each run when it is created, so
erasure and retention act on the classes the data was written under, whatever a later
version of the graph says. An erased value reads as ``Redacted(cls, at)``: a typed
tombstone, never another class's data and never a silent ``None``.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["DEFAULT_CLASS", "Classified", "Redacted"]

DEFAULT_CLASS = "default"
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


@dataclasses.dataclass(frozen=True, slots=True)
class Classified:
    """A channel's data class, as ``Annotated`` metadata beside any reducer."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"data class {self.name!r} must be lower-case letters, digits, '_' or '-' "
                "(at most 40), starting with a letter: for example Classified('pii')"
            )


@dataclasses.dataclass(frozen=True, slots=True)
class Redacted:
    """What a channel whose class was erased reads as: the class and when (epoch seconds)."""

    cls: str
    at: float
