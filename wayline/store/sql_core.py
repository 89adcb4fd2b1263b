"""The ground every SQL record family stands on: the backend's hooks (connections,
transactions, reads, placeholder style), the named queries, the schema and its migrations,
and the store's payload sealing. ``SQLStore`` (``wayline.store.sql_store``) is this plus
one mixin per record family; nothing here knows which database it talks to."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager, nullcontext
from importlib import resources
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from wayline.errors import (
    ForeignDatabaseError,
    KeysRequiredError,
    NewerSchemaError,
    SchemaError,
    StoreNotFoundError,
)
from wayline.store.payloads import Payloads
from wayline.store.sql import lg_queries, queries
from wayline.store.urls import redact_url

if TYPE_CHECKING:
    from wayline.store.encrypted import KeyProvider
    from wayline.store.subject_keys import SubjectVault

T = TypeVar("T")

__all__ = [
    "SCHEMA_VERSION",
    "Cursor",
    "Executor",
    "SQLCore",
    "SchemaContract",
    "load_queries",
    "migrations",
    "split_statements",
]

ENCRYPTION_MARK = "aes-256-gcm"
"""``wayline_meta.encryption`` of a store whose payloads are sealed: a keyless open of it
is refused, so no handle writes plaintext beside sealed rows."""


def migrations(dialect: str) -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of every numbered migration of a dialect, in order."""
    folder = resources.files("wayline.store.sql").joinpath(dialect)
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_\w+\.sql", entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text()))
    return sorted(found)


SCHEMA_VERSION = migrations("sqlite")[-1][0]
"""The schema version this wayline writes; both dialects move in step."""


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Executor(Protocol):
    """A connection inside a transaction."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, query: str, rows: Sequence[Sequence[Any]], /) -> Any: ...


def load_queries(placeholder: str = "?") -> SimpleNamespace:
    """The named queries, with ``?`` rewritten to the backend's placeholder."""

    def convert(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("?", placeholder)
        if isinstance(value, list):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        return value

    found = {**vars(queries), **vars(lg_queries)}
    names = {k: v for k, v in found.items() if k.startswith(("Q_", "HELD_", "RUN_", "EFFECT_"))}
    return SimpleNamespace(**{k: convert(v) for k, v in names.items()})


def split_statements(script: str) -> list[str]:
    lines = [ln for ln in script.splitlines() if not ln.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


class SchemaContract(Protocol):
    """The store's own life: its URL, its tables and their schema version."""

    url: str

    quick_reads: bool
    """Whether a small read waits for no writer and no network, so a server may make it on
    its event loop instead of handing it to a thread (SQLite on a file: its read
    connections never wait for the writer's fsync; not PostgreSQL, where each read is a
    round trip)."""

    def table_names(self) -> list[str]:
        """Every table of the schema (a new table must be metered or declared exempt)."""
        ...

    def schema_version(self) -> int:
        """The schema version of the database (0 when it has none)."""
        ...

    def upgrade(self) -> list[str]:
        """Apply missing migrations; return their names."""
        ...

    def close(self) -> None: ...


class SQLCore:
    """The hooks a backend implements (``_tx``, ``_read``, ``_read_dicts``,
    ``table_names``, ``close``; it sets ``q`` from ``load_queries`` and ``url``), and what
    every family shares: the schema, the payload path, the wake-ups."""

    url: str
    q: SimpleNamespace
    quick_reads = False
    placeholder = "?"
    dialect = "sqlite"
    vault: SubjectVault | None
    payloads: Payloads = Payloads()
    """Every payload column goes in and out through this: sealed when the store is
    encrypted, checksummed always (``wayline.store.payloads``)."""

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Executor]:
        """A transaction: yields an ``Executor``, commits on exit, rolls back on error.
        ``tenant`` scopes it where the backend enforces tenancy itself (PostgreSQL RLS)."""
        raise NotImplementedError

    def write_turn(self) -> AbstractContextManager[None]:
        return nullcontext()

    def _ride(self, tenant: str | None, fn: Callable[[Any], T]) -> T:
        """``fn(db)`` committed durably, in a transaction of its own here; SQLite lets it
        ride on the durable transaction in flight (``wayline.store.sqlite_riders``)."""
        with self._tx(tenant) as db:
            return fn(db)

    def _write_later(self, tenant: str | None, key: Hashable, fn: Callable[[Any], Any]) -> None:
        """``fn(db)`` for a write nothing durable depends on (a status derived again the
        same if lost): here at once, in a lease's transaction; SQLite queues it for its next
        transaction instead (``wayline.store.sqlite_riders``). ``key``: what replaces it."""
        with self._lease_tx(tenant) as db:
            fn(db)

    def _lease_tx(self, tenant: str | None = None) -> AbstractContextManager[Any]:
        """A transaction that moves only a lease (claim, heartbeat, release): the backend may
        let it ride on the next durable commit instead of forcing it to disk itself."""
        return self._tx(tenant)

    def _read(self, query: str, params: Sequence[Any], tenant: str | None = None) -> list[Any]:
        raise NotImplementedError

    def table_names(self) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _read_dicts(
        self, query: str, params: Sequence[Any], tenant: str | None = None
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _rescope(self, db: Executor, tenant: str) -> None:
        """Name the tenant of the next statements where the backend enforces tenancy itself
        (PostgreSQL row-level security); a group transaction spans several tenants."""

    def _notify(self, db: Executor, *, one: bool = False) -> None:
        """Wake idle workers (PostgreSQL: NOTIFY; SQLite: this process's slots, and others'
        by datagram); ``one``: the transaction made one run claimable."""

    def _announce(self, db: Executor, runs: Sequence[tuple[str, str]]) -> None:
        """Tell other processes, with the transaction, that ``runs`` moved (PostgreSQL with
        ``?announce=1``: a NOTIFY each, for the streams of a server elsewhere; this
        process's listeners hear of it from ``observe.moved`` after the commit)."""

    # -- schema -----------------------------------------------------------------------

    def _lock_schema(self, db: Any) -> None:
        """Serialize migrations between processes (PostgreSQL takes an advisory lock)."""

    def schema_version(self) -> int:
        """The version of the schema in the database; 0 when it has none yet."""
        return self._inspect_schema()

    def upgrade(self) -> list[str]:
        """Apply the migrations the database lacks and return their names: an empty
        database gets them all in one transaction, so a process opening it meanwhile sees
        no schema or the whole one, never a version halfway (which it would refuse as an
        old store); an existing one gets each in its own transaction. Safe to run from
        several processes at once. Refuses (writing nothing) a database it must not touch:
        see ``_check_schema``."""
        applied = []
        set_version = self.q.Q_SET_SCHEMA_VERSION
        pending = list(migrations(self.dialect))
        while pending:
            with self._tx() as db:
                self._lock_schema(db)
                current = self.schema_version_in(db)
                if current >= pending[-1][0]:
                    break  # another process got there first
                batch = pending if current == 0 else pending[:1]
                pending = pending[len(batch) :]
                for version, name, sql in batch:
                    if version <= current:
                        continue
                    for statement in split_statements(sql):
                        db.execute(statement)
                    db.execute(set_version, (str(version),))
                    applied.append(name)
        return applied

    def schema_version_in(self, db: Executor) -> int:
        """The schema version, read inside a transaction (after the migration lock)."""
        tables = [name for (name,) in db.execute(self.q_tables).fetchall()]
        row = db.execute(self.q.Q_SCHEMA_VERSION).fetchone() if "wayline_meta" in tables else None
        return self._check_schema(tables, None if row is None else row[0])

    def _inspect_schema(self) -> int:
        """The schema version, read without a transaction and without writing."""
        tables = self.table_names()
        row = self._read(self.q.Q_SCHEMA_VERSION, ()) if "wayline_meta" in tables else []
        return self._check_schema(tables, row[0][0] if row else None)

    def _check_schema(self, tables: Sequence[str], stored: Any) -> int:
        """The version a database is at, or a ``SchemaError`` for one wayline must refuse:
        foreign tables and no ``wayline_meta`` (someone else's database), a ``wayline_meta``
        without its version row (writing version 1 over it, as wayline once did, then
        failed every later open), or a version above the newest migration (a newer
        wayline's store: "up to date" would be a lie). 0: an empty database."""
        ours = [t for t in tables if not t.startswith(("sqlite_", "pg_"))]
        if "wayline_meta" not in ours:
            if ours:
                shown = ", ".join(sorted(ours)[:5]) + (", ..." if len(ours) > 5 else "")
                raise ForeignDatabaseError(
                    f"the database at {self.redacted_url} is not a wayline store: it holds "
                    f"tables wayline did not create ({shown}) and no wayline_meta. Point "
                    "--db at a new file or an empty database (PostgreSQL: its own schema, "
                    "?schema=wayline); nothing was written to this one"
                )
            return 0
        if stored is None or not str(stored).isdigit():
            raise SchemaError(
                f"the database at {self.redacted_url} has wayline tables but its schema "
                f"version row is {'missing' if stored is None else repr(stored)}: it was "
                "edited by hand or damaged. Restore it from a backup, or put the version "
                "back (INSERT INTO wayline_meta VALUES ('schema_version', 'N') with N the "
                "version of the wayline that wrote it); nothing was written to it"
            )
        version = int(stored)
        if version > SCHEMA_VERSION:
            raise NewerSchemaError(
                f"the database at {self.redacted_url} has wayline schema version {version}, "
                f"newer than this wayline's {SCHEMA_VERSION} (it was written by a newer "
                "wayline): upgrade wayline to use it; nothing was written to it"
            )
        return version

    q_meta_exists = ""
    """A query that returns a row when the ``wayline_meta`` table exists."""
    q_tables = ""
    """A query listing the tables of the database (PostgreSQL: of the current schema)."""

    @property
    def redacted_url(self) -> str:
        """The URL without its password, for messages and logs."""
        return redact_url(self.url)

    def _open_schema(self, *, upgrade: bool, create: bool = True) -> None:
        """Check the schema before anything is written: refuse what wayline must not
        touch, create the schema of an empty database (unless only reading: ``create``
        False), or upgrade it when asked."""
        version = self._inspect_schema()
        if version == 0 and not create:
            raise StoreNotFoundError(
                f"there is no wayline store at {self.redacted_url} (the database is empty or "
                "missing): check the URL or path; a worker or `wayline db "
                "upgrade` creates one"
            )
        if version < SCHEMA_VERSION and version != 0 and not upgrade:
            raise SchemaError(
                f"the database at {self.redacted_url} has wayline schema version {version}, "
                f"this wayline needs {SCHEMA_VERSION}: run `wayline db upgrade --db URL` "
                "(runs in it stay resumable across the upgrade)"
            )
        self._prepare_writes()
        if version < SCHEMA_VERSION:
            self.upgrade()

    def _prepare_writes(self) -> None:
        """Settings that change the database file (SQLite: WAL mode), applied only once
        the schema check passed, so that a refused database is left byte for byte."""

    def _meta(self, key: str) -> str | None:
        if not self._read(self.q_meta_exists, ()):
            return None
        rows = self._read(self.q.Q_META, (key,))
        return str(rows[0][0]) if rows else None

    def _adopt_keys(self, keys: KeyProvider | None) -> None:
        """Seal payloads with ``keys``. An encrypted store remembers it is one: opened
        without keys, it is refused before anything is read or written."""
        marked = self._meta("encryption") is not None
        if keys is None:
            if marked:
                raise KeysRequiredError(
                    f"the store at {self.url} is encrypted: open it with its keys, "
                    "wayline.connect(url, keys=provider); nothing was read or written"
                )
            self.payloads = Payloads()
            return
        from wayline.store.encrypted import AESGCMSealer
        from wayline.store.subject_keys import SubjectVault

        sealer = AESGCMSealer(keys)
        self.vault = keys if isinstance(keys, SubjectVault) else None
        if not marked:
            with self._tx() as db:
                db.execute(self.q.Q_SET_META, ("encryption", ENCRYPTION_MARK))
        self.payloads = Payloads(sealer)

    @property
    def encrypted(self) -> bool:
        return self.payloads.sealer.encrypted
