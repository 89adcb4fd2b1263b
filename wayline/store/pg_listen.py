"""One LISTEN connection a PostgreSQL store, relaying its work channel's notices to the
process's idle worker slots (``WorkSignal``).

Before, each idle slot took its turn on a shared LISTEN connection, holding a lock for its
whole wait: the other idle slots queued on that lock instead of on the notices, a stop
could not wake them (``wake_waiting``), and closing the store waited out the current wait.
The notices sent while every slot was busy stayed buffered on the connection, and each one
later ended a wait for a claim that found nothing. Here a thread reads the notices as they
come, whatever the slots are doing, and each one wakes one waiting slot; a notice that
found every slot busy wakes nobody later, since a slot sleeps only on notices its last scan
did not see. A stop wakes every slot at once.

Measured (4 ``wayline worker`` processes at concurrency 8 draining 512 runs, ``--poll
0.05``): the empty claims of a cell come from the idle slots' polls, not from stale
notices, so this changed neither the claim count nor the throughput measurably.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from wayline.store.work_signal import WorkSignal

__all__ = ["NoticeRelay"]

log = logging.getLogger("wayline.store")

CHECK_EVERY = 0.1
"""Seconds between the relay's looks at whether its store closed (the longest ``close``
waits for it)."""


class NoticeRelay:
    """LISTENs on ``channel`` from a thread started by the first idle slot (``start``)."""

    def __init__(self, conninfo: str, channel: str, signal: WorkSignal) -> None:
        self.conninfo = conninfo
        self.channel = channel
        self.signal = signal
        self.received = 0
        """Notices relayed so far (what a test waits for)."""
        self.listening = threading.Event()
        """Set once the LISTEN is in place (cleared while the connection is lost)."""
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Listen from now on (once a store: later calls return at once)."""
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(
                    target=self._listen, name="wayline-listen-work", daemon=True
                )
                self._thread.start()

    def close(self) -> None:
        """Stop listening; returns once the connection is closed."""
        self._stopping.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5 * CHECK_EVERY + 1.0)

    def _listen(self) -> None:
        import psycopg

        conn: psycopg.Connection[Any] | None = None
        failures = 0  # said once an outage (at its second failure: not a server's restart)
        try:
            while not self._stopping.is_set():
                try:
                    if conn is None or conn.closed:
                        conn = psycopg.connect(self.conninfo, autocommit=True)
                        conn.execute(f'LISTEN "{self.channel}"')
                        failures = 0
                        self.listening.set()
                        self.signal.notify()  # what started before the LISTEN: scan once
                    for _ in conn.notifies(timeout=CHECK_EVERY):
                        self.received += 1
                        self.signal.notify(1)
                except psycopg.Error as exc:  # the database is away: poll, retry
                    failures += 1
                    if failures == 2 and not self._stopping.is_set():
                        log.warning("listening for new work failed, retrying: %s", exc)
                    self.listening.clear()
                    if conn is not None:
                        conn.close()
                    conn = None
                    self._stopping.wait(1.0)
        finally:
            if conn is not None:
                conn.close()
