"""SQLite backend: the embedded default. WAL mode; several processes on one machine.

``synchronous`` is the database's own durability layer under wayline's modes. FULL (the
default) survives a process kill and a power loss; NORMAL survives a process kill, not an
OS crash. Measured on the 2-vCPU dev machine (shared/ANCHORS.md): one-row WAL commits at
~3,300/s with FULL and ~27,000/s with NORMAL (and as low as ~450/s with FULL on a busy day).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

from wayline.errors import StoreError
from wayline.store.sql_store import SCHEMA_VERSION, SQLStore, load_queries, split_statements

__all__ = ["SYNCHRONOUS_LEVELS", "SQLiteStore"]

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
_QUERIES = load_queries("?")
Q_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
Q_SET_VERSION = "INSERT OR IGNORE INTO wayline_meta (key, value) VALUES ('schema_version', ?)"


class SQLiteStore(SQLStore):
    """The store on one SQLite file (or ``:memory:``), shared safely by threads."""

    q = _QUERIES

    def __init__(self, path: str, *, synchronous: str = "FULL", busy_timeout_ms: int = 10_000):
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise StoreError(
                f"synchronous={synchronous!r} is not a SQLite level; use one of "
                f"{', '.join(SYNCHRONOUS_LEVELS)}"
            )
        self.path = path
        self.synchronous = level
        self.url = f"sqlite:///{path}" + ("" if level == "FULL" else f"?synchronous={level}")
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if path != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute(f"PRAGMA synchronous = {level}")
            self._create_schema()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}") from exc

    def _create_schema(self) -> None:
        schema = resources.files("wayline.store.sql").joinpath("sqlite_schema.sql").read_text()
        with self._tx() as db:
            for statement in split_statements(schema):
                db.execute(statement)
            db.execute(Q_SET_VERSION, (str(SCHEMA_VERSION),))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock up front."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite could not begin a transaction: {exc}") from exc
            try:
                yield db
            except sqlite3.Error as exc:
                db.execute("ROLLBACK")
                raise StoreError(f"SQLite write failed and was rolled back: {exc}") from exc
            except BaseException:
                db.execute("ROLLBACK")
                raise
            else:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as exc:
                    db.execute("ROLLBACK")
                    raise StoreError(f"SQLite commit failed: {exc}") from exc

    def _read(self, query: str, params: Sequence[Any]) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite read failed: {exc}") from exc

    def table_names(self) -> list[str]:
        return [name for (name,) in self._read(Q_TABLES, ())]

    def close(self) -> None:
        with self._lock:
            self._db.close()
