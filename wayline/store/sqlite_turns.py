"""Writers of one SQLite file take turns in the kernel's queue, with a deadline.

Before SQLite's BEGIN IMMEDIATE, a writer takes an exclusive ``flock`` on a lock file beside
the database (``DB-wayline-lock``), across processes and handles. Without it a second
process's writer met SQLite's busy handler, which sleeps 1, 2, 5, 10 ms... while the holder
commits in a fraction of a millisecond: two worker processes at concurrency 8 on one file
drained 512 queued runs at 3,400-3,700 steps/s together, with turns at 4,400-4,600 (2-vCPU
dev machine, synchronous=FULL). A blocked ``flock`` waits without the GIL and wakes when the
holder unlocks.

``flock`` has no timeout, and a process stopped inside a write (SIGSTOP, a debugger) would
hold every other writer until it went on or died (the kernel drops a dead process's lock).
So a writer that does not get the turn at once waits through ``_TurnWaiter``, a thread that
blocks in ``flock`` on its behalf while the writer waits on an event with the store's busy
timeout: past it the write fails with a ``StoreError`` that says so, as SQLite's own
"database is locked" did, and the waiter gives the turn straight back when it comes.

Where no lock file can be made (a read-only directory, ``:memory:``, no ``fcntl``) SQLite's
locking alone serializes writers.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import ClassVar

from wayline.errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: SQLite's own busy handler alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterTurns"]


class WriterTurns:
    """One database file's writer turns, for one store handle. Used under the store's own
    lock (one writer thread of a handle at a time), so ``depth`` needs no lock of its own."""

    _holders: ClassVar[dict[str, int]] = {}
    """Lock file -> the thread of this process holding its turn: a thread asking for a turn
    it already holds through another handle would wait for itself forever. Read and written
    one operation at a time (each atomic under the GIL): the check is this thread's own."""

    def __init__(self, path: str, timeout: float) -> None:
        self.fd: int | None = None
        self.depth = 0
        self._locked = False
        """The outermost turn holds the lock file's ``flock`` (False: no lock file)."""
        self.timeout = timeout
        """Seconds a writer waits for another process's turn to end (the busy timeout)."""
        self.key = "" if path == ":memory:" or fcntl is None else f"{path}-wayline-lock"
        self._waiter: _TurnWaiter | None = None

    def _open(self) -> int | None:
        """The lock file, made when a writer first needs it (an open that may create, or a
        write): a read-only open never leaves a file behind."""
        if self.fd is None and self.key:
            try:
                self.key = str(Path(self.key).resolve())
                self.fd = os.open(self.key, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                self.key = ""  # SQLite's locking alone, as without fcntl
        return self.fd

    def turn(self) -> WriterTurns:
        """This handle's turn, as a context manager (re-entrant: a nested turn of the same
        handle takes nothing). A plain object, not a generator: it is entered twice on
        every step commit (the group commit's turn, the transaction's nested one), and a
        ``@contextmanager`` cost 1-2 us of a worker's ~140 us of CPU a step each time."""
        return self

    def __enter__(self) -> None:
        if self.depth:
            self.depth += 1
            return
        fd = self._open()
        if fd is None:
            self.depth = 1
            return
        me = threading.get_ident()
        if self._holders.get(self.key) == me:  # one dict operation: atomic under the GIL
            raise StoreError(
                "a write transaction was opened on a second handle of this SQLite "
                "database while this thread holds one on another: it would wait for "
                "itself; use one store handle for both"
            )
        self._take(fd)
        self._holders[self.key] = me
        self.depth = 1
        self._locked = True

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth or not self._locked:
            return
        self._locked = False
        self._holders.pop(self.key, None)
        assert self.fd is not None
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _take(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return  # free: the common case costs one system call
        except BlockingIOError:
            pass
        if self._waiter is None:
            self._waiter = _TurnWaiter(fd)
        if not self._waiter.take(self.timeout):
            raise StoreError(
                f"another process has held the write turn of this SQLite database for "
                f"{self.timeout:g} s ({self.key}); nothing was written. Is a process "
                "writing to it stopped (SIGSTOP, a debugger) or stuck? It goes on when that "
                "process continues or ends (?busy_timeout_ms= in the store URL waits longer)"
            )

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.close()
            self._waiter = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Ask:
    """One writer's request for the turn: ``ready`` is released when it is decided."""

    __slots__ = ("abandoned", "granted", "ready")

    def __init__(self) -> None:
        self.ready = threading.Lock()
        self.ready.acquire()
        self.granted = False
        self.abandoned = False


class _TurnWaiter:
    """A thread that waits in ``flock`` for a writer, so that the writer's wait can end.

    It locks through its own duplicate of the lock file's descriptor: the lock belongs to
    the open file both share, so the writer unlocks it as if it had taken it itself, and the
    waiter never touches a descriptor the store may have closed and the process reused.
    Plain locks signal both ways: two worker processes at concurrency 4 on one file ran
    7,716-8,200 steps/s through it against 7,809-7,999 with a direct ``flock``, where an
    Event and a Condition cost about 6%."""

    def __init__(self, fd: int) -> None:
        self.fd = os.dup(fd)
        self._mutex = threading.Lock()
        self._wake = threading.Lock()
        self._wake.acquire()  # released when there is an ask, or on close
        self._pending: _Ask | None = None
        self._closed = False
        threading.Thread(target=self._serve, name="wayline-writer-turn", daemon=True).start()

    def take(self, timeout: float) -> bool:
        """Whether the turn is this writer's within ``timeout`` seconds."""
        ask = _Ask()
        with self._mutex:
            self._pending = ask
        _release(self._wake)
        ask.ready.acquire(timeout=timeout)
        with self._mutex:
            ask.abandoned = not ask.granted  # a turn granted after this gives itself back
            return ask.granted

    def close(self) -> None:
        with self._mutex:
            self._closed = True
        _release(self._wake)

    def _serve(self) -> None:
        while True:
            self._wake.acquire()
            with self._mutex:
                ask, self._pending = self._pending, None
                if ask is None:
                    if self._closed:
                        break
                    continue
            fcntl.flock(self.fd, fcntl.LOCK_EX)  # the kernel's queue, without the GIL
            with self._mutex:
                if ask.abandoned or self._closed:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                else:
                    ask.granted = True
            ask.ready.release()
        os.close(self.fd)


def _release(lock: threading.Lock) -> None:
    """Release a lock used as a signal; releasing one already released is a no-op."""
    with contextlib.suppress(RuntimeError):
        lock.release()
