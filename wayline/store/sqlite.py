"""SQLite backend: the embedded default. WAL mode; several processes on one machine.

Writes go through one connection (one writer at a time is SQLite's rule anyway); reads go
through a connection per thread, so a worker's reads (loading a run it claimed) do not
queue behind another run's commit waiting on fsync: WAL readers never block the writer.

Lease bookkeeping (claim, heartbeat, release) commits without its own fsync (``synchronous
= NORMAL`` for that transaction): in WAL mode the log is appended in order, so the next
durable commit (the run's first step) makes the claim durable too, and only an OS crash or
power loss could undo a lease move before that, which also ends every process on the
machine that could act on it (SQLite serves one machine). One fsync fewer per run claimed.

``synchronous`` is the database's own durability layer under wayline's modes. FULL (the
default) survives a process kill and a power loss; NORMAL survives a process kill, not an
OS crash. Measured on the 2-vCPU dev machine (2026-11-30): one-row WAL commits at
~3,300/s with FULL and ~27,000/s with NORMAL (and as low as ~450/s with FULL on a busy day).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wayline.errors import StoreError, StoreFullError, StoreNotFoundError, StoreURLError
from wayline.store.sql_core import Executor, load_queries
from wayline.store.sql_store import SQLStore
from wayline.store.sqlite_riders import Rider, SQLiteRiders
from wayline.store.sqlite_turns import WriterTurns
from wayline.store.sqlite_wake import Notice, SQLiteWakes
from wayline.store.wake import wake_dir

if TYPE_CHECKING:
    from wayline.store.encrypted import KeyProvider

__all__ = ["SYNCHRONOUS_LEVELS", "SQLiteStore"]

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
READ_MMAP_BYTES = 1 << 30
"""How much of the database file a read connection maps (``PRAGMA mmap_size``): its pages
are read in place instead of one ``pread`` system call and copy a 4 KB page, which was
most of a large value's read (a 4.3 MB full copy: 3.0-5.5 ms read, 1.5-2.2 ms mapped).
Reads only: the writer's connection keeps SQLite's default (writes never go through the
map, and the WAL, where new pages live until a checkpoint, is never mapped)."""
_QUERIES = load_queries("?")
Q_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"


class SQLiteStore(SQLiteRiders, SQLiteWakes, SQLStore):
    """The store on one SQLite file (or ``:memory:``), shared safely by threads."""

    q = _QUERIES
    dialect = "sqlite"
    q_meta_exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'wayline_meta'"
    q_tables = Q_TABLES
    claim_peek = 2  # a claim that sees more work wakes another slot (``RunsSQL.claim_peek``)

    def _put_deltas(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        """With the commit's time (``Q_INSERT_DELTA_TIMED``)."""
        now = time.time()
        db.executemany(self.q.Q_INSERT_DELTA_TIMED, [(*row, now) for row in rows])

    def __init__(
        self,
        path: str,
        *,
        synchronous: str = "FULL",
        secure_delete: bool = True,
        busy_timeout_ms: int = 10_000,
        upgrade: bool = False,
        keys: KeyProvider | None = None,
        create: bool = True,
        announce: bool = False,
    ):
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise StoreURLError(
                f"synchronous={synchronous!r} is not a SQLite level; use one of "
                f"{', '.join(SYNCHRONOUS_LEVELS)}"
            )
        self.path = path
        self.quick_reads = path != ":memory:"
        """On a file, reads go to read connections, which wait for no writer."""
        self.synchronous = level
        options = [] if level == "FULL" else [f"synchronous={level}"]
        options += [] if secure_delete else ["secure_delete=off"]
        options += ["announce=1"] if announce else []
        self.url = f"sqlite:///{path}" + ("?" + "&".join(options) if options else "")
        self.secure_delete = secure_delete
        self._lock = threading.RLock()
        self._busy_timeout_ms = busy_timeout_ms
        self._writers = WriterTurns(path, busy_timeout_ms / 1000)
        self._turn = _WriteTurn(self._lock, self._writers)
        self.announce = announce
        """``?announce=1``: each commit tells listening servers which runs it moved
        (``wayline.store.sqlite_wake``)."""
        self._wake = wake_dir(path)
        self._notices: list[Notice] = []
        self._stopping = threading.Event()
        self._riders: list[Rider] = []
        self._riders_mutex = threading.Lock()
        self._later: dict[Any, Any] = {}
        self._durable = True
        """False inside a lease's transaction (NORMAL): no rider may count on its fsync."""
        self._idle_readers: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        """Guards the idle readers (and ``_closed``), never held across a statement: a
        reader must not wait for ``_lock``, which a writer holds through its fsync."""
        self._closed = False
        try:
            # Only reading (create False): a path with a typo must not leave a database behind.
            no_create = not create and path != ":memory:"
            target = f"{Path(path).absolute().as_uri()}?mode=rw" if no_create else path
            self._db = sqlite3.connect(
                target,
                uri=no_create,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._db.execute(f"PRAGMA synchronous = {level}")
            # Deleted and overwritten content is zeroed in the file, so an erased value
            # leaves no plaintext in free pages or free space inside pages (off: only when
            # erasure need not reach the file's bytes). Measured cost: none visible, 328
            # steps/s on and 325 off (500 steps x 9 interleaved, synchronous=FULL, 2 vCPU).
            self._db.execute(f"PRAGMA secure_delete = {'ON' if secure_delete else 'OFF'}")
        except sqlite3.Error as exc:
            if not create and not Path(path).exists():
                raise StoreNotFoundError(
                    f"there is no SQLite database at {path!r}: check the path (a read never "
                    "creates one; a worker or `wayline db upgrade` does)"
                ) from None
            raise StoreURLError(f"cannot open SQLite database {path!r}: {exc}") from exc
        try:
            self._open_schema(upgrade=upgrade, create=create)
            self._adopt_keys(keys)
        except BaseException:
            self.close()  # a refused store holds nothing open (its read connections too)
            raise

    def _open_schema(self, *, upgrade: bool, create: bool = True) -> None:
        """Under this process's writer turn when it may create: a second process opening a
        new file while the first switches it to WAL got "database is locked" from the
        PRAGMA (seen starting two worker processes at once)."""
        if not create:
            return super()._open_schema(upgrade=upgrade, create=create)
        with self._lock, self._writers.turn():
            return super()._open_schema(upgrade=upgrade, create=create)

    def _prepare_writes(self) -> None:
        if self.path != ":memory:":
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
            except sqlite3.Error as exc:
                raise StoreURLError(f"cannot open SQLite database {self.path!r}: {exc}") from exc

    def write_turn(self) -> AbstractContextManager[None]:
        return self._turn

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock up front (after this
        process's turn among the file's writers, ``WriterTurns``)."""
        return _Transaction(self)

    @contextmanager
    def _lease_tx(self, tenant: str | None = None) -> Iterator[sqlite3.Connection]:
        if self.synchronous not in ("FULL", "EXTRA"):
            with self._tx(tenant) as db:
                yield db
            return
        with self._lock:
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._durable = False
            try:
                with self._tx(tenant) as db:
                    yield db
            finally:
                self._durable = True
                self._db.execute(f"PRAGMA synchronous = {self.synchronous}")

    def _rider_error(self, exc: sqlite3.Error) -> Exception:
        return _write_error(exc, self.path, "write failed and was rolled back")

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection | None]:
        """A read connection from a small pool (None for ``:memory:``, which lives in one
        connection): as many as threads read at once, kept open for the next reader."""
        if self.path == ":memory:":
            yield None
            return
        with self._pool_lock:
            conn = self._idle_readers.pop() if self._idle_readers else None
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._busy_timeout_ms / 1000,
                )
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
                conn.execute(f"PRAGMA mmap_size = {READ_MMAP_BYTES}")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite could not open a read connection: {exc}") from exc
        try:
            yield conn
        finally:
            with self._pool_lock:
                closed = self._closed
                if not closed:
                    self._idle_readers.append(conn)
            if closed:
                conn.close()

    def _read(self, query: str, params: Sequence[Any], tenant: str | None = None) -> list[Any]:
        with self._reader() as reader:
            if reader is None:
                with self._lock:
                    try:
                        return self._db.execute(query, params).fetchall()
                    except sqlite3.Error as exc:
                        raise StoreError(f"SQLite read failed: {exc}") from exc
            try:
                return reader.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite read failed: {exc}") from exc

    def _read_dicts(
        self, query: str, params: Sequence[Any], tenant: str | None = None
    ) -> list[dict[str, Any]]:
        """On a read connection, as ``_read``: the writer's lock is held through each
        commit's fsync, and the server reads its tables (threads, queued inputs) at every
        request and stream read, which waited behind the workers' commits. Inside this
        thread's own transaction, on the writer's connection, to see what it wrote."""
        in_tx: bool = self._lock._is_owned()
        with self._reader() as reader:
            if reader is None or in_tx:
                with self._lock:
                    return _dicts(self._db, query, params)
            return _dicts(reader, query, params)

    def table_names(self) -> list[str]:
        return [name for (name,) in self._read(Q_TABLES, ())]

    def scrub(self) -> dict[str, Any]:
        """Checkpoint the WAL into the database (whose freed space secure_delete zeroed)
        and truncate it to nothing, so no old page image holding an erased value stays in
        the -wal file. ``busy`` 1: another connection was reading and the WAL could not be
        truncated; scrub again when it is idle."""
        if self.path == ":memory:":
            return {"busy": 0}
        with self._lock:
            busy, log, done = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return {"busy": int(busy), "wal_frames": int(log), "checkpointed": int(done)}

    def close(self) -> None:
        self._stop_wakes()
        with self._lock:
            if self._later and not self._closed:
                with contextlib.suppress(StoreError):  # what they record is derived again
                    self._flush_later()
            with self._pool_lock:
                self._closed = True
                idle, self._idle_readers = self._idle_readers, []
            for conn in idle:
                conn.close()
            self._db.close()
            self._writers.close()
            if self._wake is not None:
                self._wake.close()


class _WriteTurn:
    """A store's writer lock and its turn among the file's writers, held together
    (``SQLiteStore.write_turn``; re-entrant, as both are). One per store: its state is the
    lock's and the turns' own."""

    __slots__ = ("lock", "turns")

    def __init__(self, lock: threading.RLock, turns: WriterTurns) -> None:
        self.lock = lock
        self.turns = turns

    def __enter__(self) -> None:
        self.lock.acquire()
        try:
            self.turns.__enter__()
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.turns.__exit__()
        finally:
            self.lock.release()


class _Transaction:
    """``SQLiteStore._tx``: a class rather than a ``@contextmanager`` generator, which cost
    a step commit 1-2 us of a worker's ~140 us of CPU (it runs once a transaction)."""

    __slots__ = ("store",)

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._turn.__enter__()
        try:
            store._db.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            store._turn.__exit__()
            if isinstance(exc, sqlite3.Error):
                raise _write_error(exc, store.path, "could not begin a transaction") from exc
            raise
        return store._db

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        store = self.store
        db = store._db
        riders: list[Rider] = []
        committed = False
        try:
            try:
                if exc is not None:
                    _abandon(store, exc)
                    return  # the body's error goes on
                try:
                    riders = store._seat_riders(db)  # small writes waiting for this COMMIT
                except BaseException as error:
                    _abandon(store, error)
                    raise
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as error:
                    _rollback(db)
                    raise _write_error(error, store.path, "commit failed") from error
                committed = True
            finally:
                notices = store._notices  # this transaction's, whatever its outcome
                if notices:
                    store._notices = []
                store._land(riders, committed=committed)
        finally:
            store._turn.__exit__()
        if notices:  # committed (an error left above): other processes may hear of it
            store._send_notices(notices)


def _abandon(store: SQLiteStore, exc: BaseException) -> None:
    """Roll the transaction back after ``exc``; SQLite's own error comes out as the store's
    (any other is left for the caller to raise)."""
    _rollback(store._db)
    if isinstance(exc, sqlite3.Error):
        raise _write_error(exc, store.path, "write failed and was rolled back") from exc


def _rollback(db: sqlite3.Connection) -> None:
    """Roll back what is still open. SQLite ends the transaction itself on some errors
    (SQLITE_FULL among them): a blind ROLLBACK then raised "cannot rollback - no
    transaction is active" over the error that mattered."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def _write_error(exc: sqlite3.Error, path: str, what: str) -> StoreError:
    """A driver error as wayline's: the disk-full case typed, with what to do."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF == sqlite3.SQLITE_FULL:
        return StoreFullError(
            f"the SQLite database {path!r} is full (no space left on its disk, or its "
            f"max_page_count reached): {exc}. The write in flight was rolled back and every "
            "step committed before it is intact; free space, then resume the run "
            "(`invoke(None)` or a worker continues from its last committed step)"
        )
    return StoreError(f"SQLite {what}: {exc}")


def _dicts(db: sqlite3.Connection, query: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    try:
        cur = db.execute(query, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    except sqlite3.Error as exc:
        raise StoreError(f"SQLite read failed: {exc}") from exc
