"""Typed errors. Each class's docstring says what happened; each message says what to do.

    WaylineError
    ├── GraphError                  the graph definition is invalid (raised by compile)
    │   ├── DuplicateNodeError
    │   ├── UnknownNodeError
    │   └── NoPathToEndError
    ├── InvalidUpdateError          a node wrote something the state does not declare
    ├── ReducerError                a reducer raised while folding writes
    ├── CodecError                  a value cannot be encoded or decoded
    ├── StepLimitError              the run took more supersteps than its limit
    ├── ReplayDivergenceError       reconstruction does not give the state that ran
    ├── StoreError                  the store failed or was asked for something it lacks
    │   ├── StoreURLError
    │   ├── RunNotFoundError
    │   └── LeaseConflictError
    └── ResumeError                 a resume does not fit the run's current state

    WaylineSignal (BaseException)   control flow a node must not swallow
    ├── GraphInterrupt
    └── LeaseLost

Signals derive from ``BaseException`` so that a broad ``except Exception`` inside a node
cannot eat an interrupt or hide that this worker no longer owns the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wayline.graph.types import Interrupt

__all__ = [
    "CodecError",
    "DuplicateNodeError",
    "GraphError",
    "GraphInterrupt",
    "GraphRecursionError",
    "InvalidUpdateError",
    "LeaseConflictError",
    "LeaseLost",
    "NoPathToEndError",
    "ReducerError",
    "ReplayDivergenceError",
    "ResumeError",
    "RunNotFoundError",
    "StepLimitError",
    "StoreError",
    "StoreURLError",
    "UnknownNodeError",
    "WaylineError",
    "WaylineSignal",
]


class WaylineError(Exception):
    """Root of every error wayline raises on purpose."""


class GraphError(WaylineError):
    """The graph definition is invalid; nothing ran."""


class DuplicateNodeError(GraphError):
    """Two nodes were given the same name."""


class UnknownNodeError(GraphError):
    """An edge, route or Send names a node the graph does not have."""


class NoPathToEndError(GraphError):
    """Some node reachable from START can never reach END."""


class InvalidUpdateError(WaylineError):
    """A node returned an update the state schema does not allow."""


class ReducerError(WaylineError):
    """A channel's reducer raised while folding a write; the step was not committed."""

    def __init__(self, channel: str, cause: BaseException) -> None:
        self.channel = channel
        super().__init__(
            f"reducer of channel {channel!r} raised {type(cause).__name__}: {cause}. "
            "The step was not committed; fix the reducer or the value written and resume."
        )


class CodecError(WaylineError):
    """A value cannot be encoded, or stored bytes cannot be decoded."""


class StepLimitError(WaylineError):
    """The run reached its superstep limit; its committed steps are kept."""


class ReplayDivergenceError(WaylineError):
    """Reconstructing a finished run from the store gave a different state digest than the
    one recorded when it committed: a resume of such a run would not continue what ran.

    Usual causes: a node mutated its input state in place, or a reducer is not a function
    of its arguments. The run's rows are intact; ``verify`` reports both digests.
    """


GraphRecursionError = StepLimitError
"""LangGraph's name for the same condition, so ported ``except`` clauses keep working."""


class StoreError(WaylineError):
    """The store failed, or holds nothing for what was asked."""


class StoreURLError(StoreError):
    """A store URL could not be parsed or opened."""


class RunNotFoundError(StoreError):
    """No run with this id exists for this tenant."""


class LeaseConflictError(StoreError):
    """Another live worker holds the run's lease."""


class ResumeError(WaylineError):
    """A resume value or command does not match the run's pending interrupts."""


class WaylineSignal(BaseException):
    """Control flow that must propagate through user code untouched."""


class GraphInterrupt(WaylineSignal):
    """Raised by ``interrupt()``: the run suspends until resumed with a decision."""

    def __init__(self, interrupts: Sequence[Interrupt] = ()) -> None:
        self.interrupts: tuple[Interrupt, ...] = tuple(interrupts)
        super().__init__(self.interrupts)


class LeaseLost(WaylineSignal):
    """This worker's fencing token is stale: another worker owns the run now.

    Nothing was written; the current owner continues the run.
    """

    def __init__(self, run_id: str, token: int, detail: Any = None) -> None:
        self.run_id = run_id
        self.token = token
        super().__init__(
            f"lease on run {run_id!r} lost (fencing token {token} is stale); "
            "this worker stopped writing and another worker owns the run now"
            + (f": {detail}" if detail else "")
        )
