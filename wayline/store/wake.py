"""Wake-ups between processes on one SQLite file: the embedded store's LISTEN/NOTIFY.

PostgreSQL tells idle workers of new work, and servers of the runs that moved, by NOTIFY.
SQLite has nothing of the kind, so processes sharing a file polled: a worker process
claimed a new run up to one poll interval late, and a server's stream beside a worker
process read its run every 10 ms while steps came. Here a listening process binds a Unix
datagram socket per kind of notice it wants (``work``: a run may be claimable; ``runs``:
these runs moved) and leaves a marker of it in a directory beside the database
(``DB-wayline-wake/``); a process that commits sends each listener of the kind one
datagram per notice, after its COMMIT, so what is announced is durable.

A notice is a hint, never the only way to learn of a change: a full socket buffer drops
it, a listener that died is forgotten by the first sender its socket refuses, and every
listener keeps its timer as well. So a lost notice costs latency, never a step.

On Linux the sockets live in the abstract namespace (nothing on disk to outlive a killed
process, no 108-byte path limit); elsewhere they are the marker files themselves, and a
database whose directory path is too long for a socket gets no wake-ups (its processes
poll, as before).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Listener", "WakeDir", "wake_dir"]

ABSTRACT = sys.platform.startswith("linux")
MAX_PATH = 100
"""Below ``sun_path``'s 104-108 bytes, for a filesystem socket (not on Linux)."""
DRAIN = 256
"""Datagrams one ``receive`` returns at most (the rest wait for the next)."""


class WakeDir:
    """The wake-up directory of one database file: sends notices and binds listeners."""

    def __init__(self, db_path: str) -> None:
        self.dir = Path(str(Path(db_path).resolve()) + "-wayline-wake")
        digest = hashlib.sha256(str(self.dir).encode()).hexdigest()[:16]
        self._prefix = f"\0wayline-wake/{digest}/"
        self._sender: socket.socket | None = None

    def address(self, name: str) -> str:
        return self._prefix + name if ABSTRACT else str(self.dir / name)

    def send(self, kind: str, notices: Sequence[bytes], *, skip: str = "\0") -> int:
        """Send ``notices`` to every listener of ``kind`` whose name does not hold ``skip``
        (the sender's own); returns the datagrams sent."""
        try:
            names = [n for n in os.listdir(self.dir) if n.startswith(kind + "-") and skip not in n]
        except OSError:  # no directory: nobody listens
            return 0
        if not names:
            return 0
        if self._sender is None:
            self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._sender.setblocking(False)
        sent = 0
        for name in names:
            for notice in notices:
                try:
                    self._sender.sendto(notice, self.address(name))
                except (ConnectionRefusedError, FileNotFoundError):  # its process is gone
                    _forget(self.dir / name)
                    break
                except OSError:  # its buffer is full: its timer finds what it missed
                    break
                sent += 1
        return sent

    def listen(self, kind: str) -> Listener | None:
        """A listener for ``kind`` (None where this file can have none: see the module)."""
        name = f"{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if not ABSTRACT and len(str(self.dir / name)) > MAX_PATH:
            return None
        try:
            self.dir.mkdir(exist_ok=True)
            return Listener(self, name)
        except OSError:  # a read-only directory: poll
            return None

    def close(self) -> None:
        if self._sender is not None:
            self._sender.close()
            self._sender = None


class Listener:
    """One bound socket and its marker; ``receive`` waits for notices."""

    def __init__(self, wake: WakeDir, name: str) -> None:
        self.marker = wake.dir / name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self.sock.bind(wake.address(name))
            if ABSTRACT:
                self.marker.touch()
        except OSError:
            self.sock.close()
            raise
        self.sock.setblocking(False)

    def receive(self, timeout: float) -> list[bytes]:
        """The notices that arrive within ``timeout`` seconds (all that are waiting, once
        the first is in; empty when none came)."""
        out: list[bytes] = []
        try:
            ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        except (OSError, ValueError):  # closed by ``close`` from another thread
            return out
        if not ready:
            return out
        while len(out) < DRAIN:
            try:
                out.append(self.sock.recv(512))
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # closed by ``close`` from another thread
                break
        return out

    def close(self) -> None:
        self.sock.close()
        _forget(self.marker)


def _forget(marker: Path) -> None:
    with contextlib.suppress(OSError):
        marker.unlink()


def wake_dir(path: str) -> WakeDir | None:
    """The wake-up directory of a database file (None for ``:memory:``, or no AF_UNIX)."""
    if path == ":memory:" or not hasattr(socket, "AF_UNIX"):
        return None
    return WakeDir(path)
