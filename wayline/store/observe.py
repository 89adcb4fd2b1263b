"""What a store reports at its durable boundaries, to whoever listens (``wayline.metrics``).

The store calls ``committed`` once per transaction that commits run batches: a run's own
commit, or a group of runs' batches in one transaction (``commit_many``), so every commit is
timed, grouped ones included. It imports nothing above the store: the listener is installed
from above (``wayline.metrics`` installs its own on import), and none costs one list read.

``moved`` names the runs a transaction moved (a step commit, grouped ones included; a status
change; appended stream events), for whoever follows runs in this process (the server's
streams: ``wayline.server.bell``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

__all__ = [
    "CommitListener",
    "RunsListener",
    "committed",
    "listen",
    "listen_runs",
    "moved",
    "unlisten_runs",
]

CommitListener = Callable[[Sequence[str], float], None]
"""Called with the tenant of each run batch the transaction committed and its seconds."""

RunsListener = Callable[[Sequence[tuple[str, str]]], None]
"""Called with the (tenant, run id) of each run a committed transaction moved."""

_listeners: list[CommitListener] = []
_run_listeners: list[RunsListener] = []


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


def listen_runs(listener: RunsListener) -> None:
    """Install ``listener`` for the runs this process's stores move (once)."""
    if listener not in _run_listeners:
        _run_listeners.append(listener)


def unlisten_runs(listener: RunsListener) -> None:
    if listener in _run_listeners:
        _run_listeners.remove(listener)


def moved(runs: Sequence[tuple[str, str]]) -> None:
    """A transaction that committed moved ``runs`` (tenant, run id): call after the commit,
    never inside it (a listener must not see a move that may still roll back)."""
    if not _run_listeners or not runs:
        return
    for listener in list(_run_listeners):
        listener(runs)
