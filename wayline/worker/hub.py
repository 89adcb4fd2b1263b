"""A worker's runs driven from one thread (``WorkerConfig.one_thread``, ``wayline worker
--one-thread``): each slot is a greenlet, and a run's step commit is where it yields.

With a thread a slot, the slots hand the GIL to each other at every step (a run waits for
its commit, another runs its node), and a hand-off between threads on different cores costs
CPU: ``bench/gil_model.py`` measured 1.6-1.95x the CPU a loop in plain CPython threads left
to the OS against the same threads on one CPU, which is why ``wayline worker`` places each
process on a CPU of its own. Here nothing is handed off: the hub runs each ready run until
it asks to commit, then commits every asked-for step in one transaction (one fsync: the
group is every run that was ready, not those that happened to queue behind a leader) and
resumes them. Measured on the 2-vCPU dev machine (SQLite, an in-process worker at
concurrency 8, 128 runs x 51 commits, two alternated rounds): 6,451 and 6,864 steps/s at
133-140 us of CPU a step with its thread left to the OS, against 3,743 and 4,198 at 236-265
us with a thread a slot; 8.0 commits a transaction against 4.7.

The cost: a node runs on the hub's thread, so a node that blocks (a network call, a model
call, a sleep) holds up every other run of this worker until it returns: the runs' steps
take turns. It suits graphs whose nodes compute or return quickly; the default (a thread a
slot) suits nodes that wait. Commits from other threads (a step's parallel tasks, an
async-mode writer), and from inside an event loop an engine runs (asyncio allows one loop a
thread), take the ordinary group commit (``wayline.store.group``) without yielding. Needs
``greenlet`` (``pip install 'wayline[one-thread]'``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wayline.errors import ConfigError
from wayline.store.base import Store
from wayline.store.group import GroupCommit
from wayline.store.records import CommitBatch

if TYPE_CHECKING:
    from wayline.worker.worker import Worker

__all__ = ["IDLE_RETRY_S", "HubCommit", "greenlets", "run_hub"]

IDLE_RETRY_S = 0.02
"""While some slots run, one idle slot looks for new work this often (one claim query),
since the hub cannot sleep on the work signal while others are ready."""


def greenlets() -> Any:
    """The ``greenlet`` module, or a ``ConfigError`` saying how to get it."""
    try:
        import greenlet
    except ImportError:
        raise ConfigError(
            "one_thread needs the greenlet package: pip install 'wayline[one-thread]' "
            "(or leave one_thread off: a thread a slot)"
        ) from None
    return greenlet


class HubCommit(GroupCommit):
    """The group commit of a one-thread worker: a slot greenlet's commit parks it (``park``)
    and gives the thread to the hub, which commits what every parked slot asked for together
    (``drain``) and resumes them."""

    def __init__(self, store: Store, *, max_group: int = 64) -> None:
        super().__init__(store, max_group=max_group)
        self.hub: Any = None
        """The hub's greenlet while it runs (set by ``run_hub``)."""
        self.waiting: list[Any] = []
        """The slots parked at a commit, to resume after the next drain."""
        self._current: Callable[[], Any] = greenlets().getcurrent

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        hub = self.hub
        if hub is None or hub.dead:  # not driven by a hub now
            return super().commit(tenant_id, run_id, token, batch)
        current = self._current()
        if current is hub or current.parent is not hub:  # another thread, or the hub itself
            return super().commit(tenant_id, run_id, token, batch)
        if asyncio._get_running_loop() is not None:  # inside an engine's own event loop: one
            return super().commit(tenant_id, run_id, token, batch)  # a thread, so it stays
        self.waiting.append(current)
        return self.park(tenant_id, run_id, token, batch, hub.switch)

    def resumable(self) -> list[Any]:
        """Commit what the parked slots asked for; the slots to resume."""
        self.drain()
        waiting, self.waiting = self.waiting, []
        return waiting


def run_hub(
    worker: Worker,
    max_runs: int | None,
    claim: Callable[[], Any],
    idle_wait: Callable[[], float],
) -> None:
    """Drive ``worker.config.concurrency`` slots on this thread until the worker stops (or
    ``max_runs`` runs were executed). ``claim``: one claim attempt (a claimed run or None);
    ``idle_wait``: how long to sleep on the work signal when no slot has anything to do."""
    greenlet = greenlets()
    commits = worker.group
    assert isinstance(commits, HubCommit)
    hub = greenlet.getcurrent()
    idle: list[Any] = []

    def slot() -> None:
        while not worker.stopping.is_set():
            if max_runs is not None and worker.completed >= max_runs:
                worker.stopping.set()
                return
            claimed = claim()
            if claimed is None:
                idle.append(greenlet.getcurrent())
                hub.switch()  # resumed to look again
                continue
            worker.execute(*claimed)

    slots = [greenlet.greenlet(slot, parent=hub) for _ in range(worker.config.concurrency)]
    commits.hub = hub
    ready = list(slots)
    looked = time.monotonic()
    probe = None
    try:
        while not all(s.dead for s in slots):
            for s in ready:
                if not s.dead:
                    s.switch()  # until it parks at a commit, goes idle or ends
            if probe is not None and probe not in idle:
                looked = 0.0  # the one that looked found work: another looks at once
            probe = None
            ready = commits.resumable() if commits.waiting else []
            live = [s for s in slots if not s.dead]
            if idle and (worker.stopping.is_set() or len(idle) == len(live)):
                if not worker.stopping.is_set():  # nothing runs: sleep on the work signal
                    worker.store.wait_for_work(idle_wait())
                ready += idle
                idle.clear()
                looked = time.monotonic()
            elif idle and time.monotonic() - looked >= IDLE_RETRY_S:
                probe = idle.pop(0)  # one looks for new work beside the busy ones
                ready.append(probe)
                looked = time.monotonic()
    finally:
        commits.hub = None
        for s in slots:  # a slot left parked by an error in another: unwound here
            if not s.dead:
                s.throw(greenlet.GreenletExit)
