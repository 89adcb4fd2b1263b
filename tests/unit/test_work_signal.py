"""Worker slots wake for new work without losing a notice to each other's wake-ups
(``wayline.store.work_signal``). Every wait here has a 60-second timeout, so a wait that
ended before the 30-second deadline was ended by a notice, never by its timer."""

from __future__ import annotations

import threading
import time

from wayline.store.work_signal import WorkSignal

TIMEOUT = 60.0


class Slot:
    """A worker slot in its own thread: scans, then (told to) waits for work."""

    def __init__(self, signal: WorkSignal) -> None:
        self.scanned = threading.Event()
        self.go = threading.Event()
        self.woke = threading.Event()
        threading.Thread(target=self._run, args=(signal,), daemon=True).start()
        assert self.scanned.wait(30.0)

    def _run(self, signal: WorkSignal) -> None:
        signal.scanning()
        self.scanned.set()
        self.go.wait(30.0)
        signal.wait(TIMEOUT)
        self.woke.set()


def test_a_notice_during_a_scan_ends_the_next_wait() -> None:
    signal = WorkSignal()
    slot = Slot(signal)  # the slot scans and finds nothing ...
    signal.notify()  # ... while a run is enqueued, before it waits
    slot.go.set()
    assert slot.woke.wait(30.0)


def test_another_slot_waking_does_not_swallow_the_notice() -> None:
    """The race an Event set-and-cleared by each waker lost: A wakes on the notice and
    clears it, B scanned before the notice and waits after it."""
    signal = WorkSignal()
    a, b = Slot(signal), Slot(signal)
    a.go.set()  # A waits
    deadline = time.monotonic() + 30.0
    while not a.woke.is_set() and time.monotonic() < deadline:
        signal.notify()  # the enqueue (again until A, perhaps not waiting yet, wakes)
        a.woke.wait(0.01)
    assert a.woke.is_set()
    b.go.set()  # B waits after the notice A woke on: it must not sleep beside the run
    assert b.woke.wait(30.0)


def test_with_no_notice_since_the_scan_the_timer_ends_the_wait() -> None:
    signal = WorkSignal()
    signal.notify()
    signal.scanning()  # saw that notice
    started = time.monotonic()
    signal.wait(0.05)
    assert time.monotonic() - started >= 0.05
