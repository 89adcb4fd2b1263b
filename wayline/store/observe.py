"""What a store reports at its durable boundaries, to whoever listens (``wayline.metrics``).

The store calls ``committed`` once per transaction that commits run batches: a run's own
commit, or a group of runs' batches in one transaction (``commit_many``), so every commit is
timed, grouped ones included. It imports nothing above the store: the listener is installed
from above (``wayline.metrics`` installs its own on import), and none costs one list read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

__all__ = ["CommitListener", "committed", "listen"]

CommitListener = Callable[[Sequence[str], float], None]
"""Called with the tenant of each run batch the transaction committed and its seconds."""

_listeners: list[CommitListener] = []


def listen(listener: CommitListener) -> None:
    """Install ``listener`` for this process (once: installing it again does nothing)."""
    if listener not in _listeners:
        _listeners.append(listener)


def committed(tenants: Sequence[str], started: float) -> None:
    """A transaction begun at ``started`` (``time.perf_counter()``) committed one batch for
    each of ``tenants`` (a run's tenant, repeated for runs of the same tenant)."""
    if not _listeners or not tenants:
        return
    seconds = time.perf_counter() - started
    for listener in _listeners:
        listener(tenants, seconds)
