"""SQLite's side of ``wayline.store.wake``: what a transaction announces, sent after it
commits, and the listeners a worker (new work) and a server (runs that moved) keep.

``work`` notices go out from every transaction that may make a run claimable (a start, a
resume, a queued input: ``_notify``), as PostgreSQL's NOTIFY does. ``runs`` notices, one
per run a transaction moved, only from a store opened with ``?announce=1`` (``wayline
worker --db 'sqlite:///app.db?announce=1'``), as on PostgreSQL: a process that serves no
streams has no need to pay for them. Listeners in the sending process are skipped: it
hears of its own commits directly (``WorkSignal``, ``observe.moved``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from wayline.store.wake import Listener, WakeDir
from wayline.store.work_signal import WorkSignal

__all__ = ["SQLiteWakes"]

log = logging.getLogger("wayline.store")

Notice = tuple[str, bytes]


class SQLiteWakes:
    """Mixed into ``SQLiteStore``: ``_notices`` collects a transaction's notices under the
    store's write lock; ``_tx`` hands them to ``_send_notices`` once it committed."""

    announce: bool = False
    _lock: Any
    _wake: WakeDir | None = None
    _notices: list[Notice]
    _work: WorkSignal
    _stopping: threading.Event

    def _notify(self, db: Any, *, one: bool = False) -> None:
        """``one``: the transaction makes one run claimable, so one idle slot of this process
        wakes (a claim that finds more wakes the next: ``claim_peek``), not all of them."""
        self._work.notify(1 if one else None)  # workers in this process wake now
        if self._wake is not None:
            self._notices.append(("work", b"w"))

    def _announce(self, db: Any, runs: Sequence[tuple[str, str]]) -> None:
        if self.announce and self._wake is not None:
            for tenant_id, run_id in dict.fromkeys(runs):
                self._notices.append(("runs", f"{tenant_id}\0{run_id}".encode()))

    def _send_notices(self, notices: Sequence[Notice]) -> None:
        if self._wake is None:
            return
        mine = self._mine()
        for kind in dict.fromkeys(k for k, _ in notices):
            payloads = list(dict.fromkeys(p for k, p in notices if k == kind))
            self._wake.send(kind, payloads, skip=mine)

    def _mine(self) -> str:
        """What the names of this process's listeners hold (``WakeDir.listen``)."""
        return f"-{os.getpid()}-"

    def wait_for_work(self, timeout: float) -> None:
        """Until a start, resume or queued input in this process or, by datagram, another
        (the timeout stays the fallback: an expiring lease sends nothing)."""
        self._work_listener()
        self._work.wait(timeout)

    def _work_listener(self) -> None:
        """One listener a store, bound when a slot first waits (its slots share it)."""
        if self._wake is None or self.__dict__.get("_work_thread") is not None:
            return
        with self._lock:
            if self.__dict__.get("_work_thread") is not None:
                return
            self.__dict__["_work_thread"] = False  # tried: one attempt per store
            listener = self._wake.listen("work")
            if listener is None:
                return
            thread = threading.Thread(
                target=self._relay, args=(listener, lambda _: self._work.notify()),
                name="wayline-wake-work", daemon=True,
            )  # fmt: skip
            self.__dict__["_work_thread"] = thread
            self.__dict__["_work_listener_"] = listener
            thread.start()

    def _stop_wakes(self) -> None:
        """On close: no more relays, and this store's work listener's marker gone now (not
        left for the next sender to find refused)."""
        self._stopping.set()
        listener = self.__dict__.get("_work_listener_")
        if listener is not None:
            listener.close()

    def listen_runs(
        self, moved: Callable[[Sequence[tuple[str, str]]], None], stopping: threading.Event
    ) -> None:
        """Until ``stopping``: call ``moved`` with the runs other processes' announcing
        stores moved (``?announce=1``), as their datagrams arrive."""
        listener = self._wake.listen("runs") if self._wake is not None else None
        if listener is None:
            stopping.wait()
            return

        def ring(notices: list[bytes]) -> None:
            runs: list[tuple[str, str]] = []
            for notice in notices:
                tenant_id, sep, run_id = notice.decode(errors="replace").partition("\0")
                if sep:
                    runs.append((tenant_id, run_id))
            if runs:
                moved(runs)

        self._relay(listener, ring, stopping)

    def _relay(
        self,
        listener: Listener,
        deliver: Callable[[list[bytes]], None],
        stopping: threading.Event | None = None,
    ) -> None:
        try:
            while not self._stopping.is_set() and not (stopping and stopping.is_set()):
                notices = listener.receive(0.25)  # back to check for a stop
                if notices:
                    try:
                        deliver(notices)
                    except Exception:  # a listener's bug must not end the wake-ups
                        log.exception("delivering wake-up notices failed")
        finally:
            listener.close()
