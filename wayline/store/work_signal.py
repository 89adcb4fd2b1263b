"""New claimable work, announced to the worker slots of this process without losing a
notice to a race between them.

A ``threading.Event`` set by the enqueue and cleared by whichever slot woke lost notices:
slot B scans and finds nothing, a run is enqueued (set), slot A, waking from an earlier
notice, clears, and B then sleeps a whole poll interval beside a claimable run (seen as
first events 250 ms late under 8 clients). Here every notice bumps a generation; a slot
remembers the generation its last scan began at and sleeps only while it is unchanged.
"""

from __future__ import annotations

import threading

__all__ = ["WorkSignal"]


class WorkSignal:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._generation = 0
        self._waiting = 0
        self._seen = threading.local()

    def notify(self, slots: int | None = None) -> None:
        """Work may have arrived: wake ``slots`` waiting slots (None: every one), and any
        about to wait. One notice of one new run wakes one (``wayline.store.pg_listen``)."""
        with self._cond:
            self._generation += 1
            if slots is None:
                self._cond.notify_all()
            else:
                self._cond.notify(slots)

    def scanning(self) -> None:
        """This thread scans for work now: a notice from here on ends its next ``wait``."""
        self._seen.generation = self._generation

    def wait(self, timeout: float) -> None:
        """Until a notice this thread's last scan did not see, or ``timeout`` passes (a
        thread that never scanned waits for the next notice)."""
        with self._cond:
            seen = getattr(self._seen, "generation", None)
            if seen is None:
                seen = self._generation
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._generation != seen, timeout)
            finally:
                self._waiting -= 1
        self._seen.generation = None

    def waiting(self) -> int:
        """How many threads wait now (what a test lines up before it sends a notice)."""
        with self._cond:
            return self._waiting
