"""What SQLite and PostgreSQL share: every Store method, written once over the named
queries in ``wayline.store.sql.queries``. A backend supplies connections, transactions,
its schema and its placeholder style; nothing here knows which database it talks to."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from importlib import resources
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from wayline.errors import (
    CodecError,
    CorruptionError,
    EffectRecordChanged,
    ForeignDatabaseError,
    KeysRequiredError,
    LeaseConflictError,
    LeaseLost,
    NewerSchemaError,
    RunExistsError,
    RunNotFoundError,
    SchemaError,
    StoreNotFoundError,
    TenantMismatchError,
)
from wayline.store import observe
from wayline.store.lg_sql import LangGraphSQL, lg_payload_columns
from wayline.store.memory_sql import MemorySQL
from wayline.store.payloads import Payloads, json_column
from wayline.store.payloads import checksum as crc
from wayline.store.records import (
    SETTLED_STATUSES,
    AuditRecord,
    CommitBatch,
    DeltaRecord,
    EffectRecord,
    EffectStatus,
    EffectWrite,
    InterruptRecord,
    MeterRow,
    PendingWriteRecord,
    RunRecord,
    RunStatus,
    SegmentRecord,
    SnapshotRecord,
)
from wayline.store.sql import lg_queries, queries
from wayline.store.sql_rewrite import RewriteMixin
from wayline.store.sql_subject_keys import SubjectKeysMixin
from wayline.store.stream_sql import StreamEventsSQL, stream_event_ident
from wayline.store.urls import redact_url

if TYPE_CHECKING:
    from wayline.store.encrypted import KeyProvider

__all__ = [
    "SCHEMA_VERSION",
    "Executor",
    "SQLStore",
    "fence_params",
    "load_queries",
    "migrations",
    "nodes_json",
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


class SQLStore(RewriteMixin, SubjectKeysMixin, LangGraphSQL, StreamEventsSQL, MemorySQL):
    """The Store protocol over SQL. Subclasses implement ``_tx``, ``_read`` and
    ``table_names``, and set ``q`` (from ``load_queries``) and ``url``."""

    url: str
    q: SimpleNamespace
    placeholder = "?"
    dialect = "sqlite"
    payloads: Payloads = Payloads()
    """Every payload column goes in and out through this: sealed when the store is
    encrypted, checksummed always (``wayline.store.payloads``)."""

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Executor]:
        """A transaction: yields an ``Executor``, commits on exit, rolls back on error.
        ``tenant`` scopes it where the backend enforces tenancy itself (PostgreSQL RLS)."""
        raise NotImplementedError

    def write_turn(self) -> AbstractContextManager[None]:
        return nullcontext()

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

    # -- runs -------------------------------------------------------------------------

    def create_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        incarnation: str | None = None,
        fingerprint: str = "",
        shape: str | None = None,
    ) -> RunRecord:
        with self._tx(tenant_id) as db:
            row = self._insert_run(
                db,
                tenant_id,
                run_id,
                graph_name,
                graph_version,
                durability,
                schema_version,
                subject=subject,
                classes=classes,
                incarnation=incarnation,
                identity=(fingerprint, shape),
            )
        return self._existing(tenant_id, run_id) if row is None else self._run(row)

    def enqueue(
        self,
        tenant_id: str,
        run_id: str,
        inbox: bytes,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        fingerprint: str = "",
        shape: str | None = None,
        engine: str = "wayline",
    ) -> RunRecord:
        """Hand a run input (a start or a resume decision) to whichever worker claims it."""
        with self._tx(tenant_id) as db:
            row = self.enqueue_in(
                db,
                tenant_id,
                run_id,
                inbox,
                graph_name=graph_name,
                graph_version=graph_version,
                durability=durability,
                schema_version=schema_version,
                subject=subject,
                classes=classes,
                identity=(fingerprint, shape),
            )
            if engine != "wayline":
                db.execute(self.q.Q_SET_ENGINE, (engine, tenant_id, run_id, engine))
                row = None  # read back with its engine
        return self._existing(tenant_id, run_id) if row is None else self._run(row)

    def enqueue_in(
        self,
        db: Executor,
        tenant_id: str,
        run_id: str,
        inbox: bytes,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        identity: tuple[str, str | None] = ("", None),
    ) -> Any:
        """``enqueue`` inside a transaction of the caller's (a schedule's fire commits the
        run's input with the tick it spends): the new row, or None when the run existed."""
        stored, crc_ = self.payloads.put(
            _inbox_ident(tenant_id, run_id), tenant_id, f"{run_id}|n", inbox
        )
        row = self._insert_run(
            db,
            tenant_id,
            run_id,
            graph_name,
            graph_version,
            durability,
            schema_version,
            inbox=(stored, crc_),
            subject=subject,
            classes=classes,
            identity=identity,
        )
        if row is None:  # the run exists: its new input waits in its inbox
            now = time.time()
            db.execute(self.q.Q_SET_INBOX, (stored, crc_, now, now, tenant_id, run_id))
        db.execute(self.q.Q_PUT_METER, (tenant_id, run_id, -1, "runs", "inbox", len(stored)))
        self._notify(db)
        return row

    def _insert_run(
        self,
        db: Executor,
        tenant_id: str,
        run_id: str,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str,
        *,
        inbox: tuple[bytes, int] | None = None,
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        incarnation: str | None = None,
        lease: tuple[str, float] | None = None,
        identity: tuple[str, str | None] = ("", None),
    ) -> Any:
        """Insert the run row (a new incarnation) unless it exists: the new row, or None
        when the run existed. With ``lease`` (owner, seconds) the row is born claimed,
        fencing token 1."""
        now = time.time()
        stored, crc_ = inbox if inbox is not None else (None, None)
        held = (0, None, None) if lease is None else (1, lease[0], now + lease[1])
        row = (tenant_id, run_id, graph_name, graph_version, durability, *held, now, now, stored)
        params: tuple[Any, ...] = (
            *row,
            schema_version,
            crc_,
            incarnation or uuid.uuid4().hex,
            now,
            *identity,
        )
        q = self.q
        if subject is not None or classes:  # docs/data.md: two more columns
            params = (*params, subject, _classes_json(classes))
            query = q.Q_CREATE_RUN_LABELLED
        else:
            query = q.Q_CREATE_RUN
        return db.execute(query, params).fetchone()

    def _existing(self, tenant_id: str, run_id: str) -> RunRecord:
        run = self.get_run(tenant_id, run_id)
        assert run is not None
        return run

    def _notify(self, db: Executor) -> None:
        """Wake idle workers (PostgreSQL: NOTIFY; SQLite workers poll)."""

    def wait_for_work(self, timeout: float) -> None:
        """Block until new work may be claimable or ``timeout`` passes."""
        self._wakeup.wait(timeout)
        self._wakeup.clear()

    @property
    def _wakeup(self) -> threading.Event:
        event = self.__dict__.get("_wakeup_event")
        if event is None:
            event = self.__dict__["_wakeup_event"] = threading.Event()
        return event

    def claim_next(
        self,
        *,
        owner: str,
        lease_seconds: float,
        graphs: Sequence[tuple[str, str, str]],
        tenant_id: str | None = None,
    ) -> tuple[RunRecord, int] | None:
        """Claim a claimable run of these (graph name, version, fingerprint) triples: first
        one abandoned by a worker whose lease expired (claimable at once: no sweeper, and no
        wait behind the queue), else the oldest new run or one waiting to resume or retry. A
        run of a version (or a shape) this worker lacks is left for one that has it. Returns
        the run and the new fencing token."""
        if not graphs:
            return None
        now = time.time()
        branches: list[str] = []
        params: list[Any] = []
        for name, version, fingerprint in graphs:
            for branch in self.q.Q_CLAIM_BRANCHES:
                branches.append(
                    f"SELECT * FROM ({branch.format(lock=self.claim_lock)}) AS b{len(branches)}"
                )
                times = [now] * (branch.count(self.placeholder) - 5)
                params += [name, version, fingerprint, *times, tenant_id, tenant_id]
        query = self.q.Q_CLAIM_CANDIDATE.format(branches=" UNION ALL ".join(branches))
        with self._lease_tx(tenant_id) as db:
            row = db.execute(query, params).fetchone()
            if row is None:
                return None
            tenant, run_id, taken = row
            take = (owner, now + lease_seconds, now, tenant, run_id)
            row = db.execute(self.q.Q_CLAIM_TAKE, take).fetchone()
        try:
            run = self._run(row)  # the whole row came back with the claim: no read after it
        except CorruptionError as exc:  # its queued input is damaged: visible, not retried
            token = int(dict(zip(self.q.RUN_COLUMN_NAMES, row, strict=True))["fencing_token"])
            self.note_error(tenant, run_id, token=token, error=str(exc), status="failed")
            self.release(tenant, run_id, token)
            raise
        if taken:  # from a holder whose lease expired: what follows is a recovery
            run = dataclasses.replace(run, taken_over=True)
        return run, run.fencing_token

    def next_expiry(
        self, *, graphs: Sequence[tuple[str, str, str]], tenant_id: str | None = None
    ) -> float | None:
        """When the first lease held on a run of these graphs runs out, or the first timer or
        expiry of one falls due (None: neither): an idle worker sleeps until then instead
        of a whole poll interval, so a timer fires within milliseconds of its time."""
        if not graphs:
            return None
        ph = self.placeholder
        clause = " OR ".join([f"(graph_name = {ph} AND graph_version = {ph})"] * len(graphs))
        pairs = [part for name, version, _ in graphs for part in (name, version)]
        query = self.q.Q_NEXT_EXPIRY.format(graphs=clause)
        now = time.time()
        rows = self._read(query, (*pairs, now, tenant_id, tenant_id), tenant=tenant_id)
        wakes = self._read(
            self.q.Q_NEXT_WAKE.format(graphs=clause),
            (*pairs, now, tenant_id, tenant_id, *pairs, tenant_id, tenant_id),
            tenant=tenant_id,
        )
        due = [float(r[0]) for r in (*rows, *wakes) if r[0] is not None]
        return min(due) if due else None

    claim_lock = ""
    """Row lock suffix of the claim query (PostgreSQL: FOR UPDATE SKIP LOCKED)."""

    def heartbeat(
        self, tenant_id: str, run_id: str, *, token: int, owner: str, lease_seconds: float
    ) -> tuple[bool, bool]:
        """Extend a held lease. Returns (still held, cancellation requested)."""
        expires = time.time() + lease_seconds
        with self._lease_tx(tenant_id) as db:
            row = db.execute(
                self.q.Q_HEARTBEAT, (expires, tenant_id, run_id, token, owner)
            ).fetchone()
        return (row is not None, bool(row[0]) if row is not None else False)

    def request_cancel(self, tenant_id: str, run_id: str) -> bool:
        """Cancel a run: at once if no worker holds it, else at its holder's next step."""
        now = time.time()
        with self._tx(tenant_id) as db:
            cur = db.execute(self.q.Q_REQUEST_CANCEL, (now, now, tenant_id, run_id))
            return cur.rowcount == 1

    def schedule_retry(
        self, tenant_id: str, run_id: str, *, token: int, wake_at: float, error: str
    ) -> None:
        """Give a failed run back to the queue, claimable from ``wake_at`` (fenced)."""
        with self._tx(tenant_id) as db:
            params = (wake_at, wake_at, error, time.time(), tenant_id, run_id, token)
            if db.execute(self.q.Q_SCHEDULE_RETRY, params).rowcount != 1:
                raise LeaseLost(run_id, token)
            self._notify(db)

    def note_error(
        self,
        tenant_id: str,
        run_id: str,
        *,
        token: int,
        error: str,
        status: RunStatus | None = None,
    ) -> None:
        """Record an error beside a run (and optionally a new status), fenced; the run's
        committed step is never changed, so a run that could not be read stays reachable."""
        with self._tx(tenant_id) as db:
            params = (error, status, time.time(), tenant_id, run_id, token)
            if db.execute(self.q.Q_NOTE_ERROR, params).rowcount != 1:
                raise LeaseLost(run_id, token)

    def requeue(self, tenant_id: str, run_id: str) -> bool:
        """An operator puts a failed (dead-lettered) or parked run back in the queue."""
        with self._tx(tenant_id) as db:
            now = time.time()
            cur = db.execute(self.q.Q_REQUEUE, (now, now, tenant_id, run_id))
            if cur.rowcount == 1:
                self._notify(db)
            return cur.rowcount == 1

    def get_run(self, tenant_id: str, run_id: str) -> RunRecord | None:
        rows = self._read(self.q.Q_GET_RUN, (tenant_id, run_id), tenant=tenant_id)
        return self._run(rows[0]) if rows else None

    def list_runs(
        self,
        tenant_id: str,
        *,
        status: RunStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[RunRecord]:
        params = (tenant_id, status, status, limit, offset)
        return [self._listed(r) for r in self._read(self.q.Q_LIST_RUNS, params, tenant=tenant_id)]

    def run_ids_with_prefix(self, tenant_id: str, prefix: str, *, limit: int = 10) -> list[str]:
        params = (tenant_id, len(prefix), prefix, limit)
        return [r[0] for r in self._read(self.q.Q_RUN_IDS_WITH_PREFIX, params, tenant=tenant_id)]

    def _listed(self, row: Sequence[Any]) -> RunRecord:
        """A run for a listing. One whose row cannot be read is listed with why (as its
        error, its input and metadata left out), not allowed to hide every other run from
        the operator who has to find it."""
        try:
            return self._run(row)
        except CorruptionError as exc:
            r = dict(zip(self.q.RUN_COLUMN_NAMES, row, strict=True))
            del r["inbox"], r["inbox_crc"]
            r.update(inbox=None, next_nodes=(), classes={}, redacted={}, error=str(exc))
            r.update(attempts=int(r["attempts"]), cancel_requested=bool(r["cancel_requested"]))
            return RunRecord(**r)

    def _run(self, row: Sequence[Any]) -> RunRecord:
        """A run from its row, by column name; the inbox verified and opened."""
        r = dict(zip(self.q.RUN_COLUMN_NAMES, row, strict=True))
        tenant, run_id = r["tenant_id"], r["run_id"]
        inbox = self.payloads.get_opt(
            _inbox_ident(tenant, run_id), tenant, f"{run_id}|n", r.pop("inbox"), r.pop("inbox_crc")
        )
        ident = ("runs", tenant, run_id)  # a damaged column fails a claim, not a slot
        r.update(
            inbox=inbox,
            next_nodes=json_column(ident, r["next_nodes"], "its next nodes", tuple),
            classes=json_column(ident, r["classes"] or "{}", "its classes", dict),
            redacted=json_column(ident, r["redacted"] or "{}", "its erasures", dict),
            attempts=int(r["attempts"]),
            cancel_requested=bool(r["cancel_requested"]),
        )
        return RunRecord(**r)

    def _effect(self, row: Sequence[Any]) -> EffectRecord:
        """An effect record from its row, by column name; the result verified and opened."""
        r = dict(zip(self.q.EFFECT_COLUMN_NAMES, row, strict=True))
        t, key = r["tenant_id"], r.pop("effect_key")
        r["result"] = self.payloads.get_opt(
            ("effects", t, key), t, f"e|{key}", r["result"], r.pop("result_crc")
        )
        return EffectRecord(key=key, **r)

    # -- leases -----------------------------------------------------------------------

    def claim(
        self, tenant_id: str, run_id: str, *, owner: str, lease_seconds: float, steal: bool = False
    ) -> int:
        now = time.time()
        with self._lease_tx(tenant_id) as db:
            if not steal:  # whose lease it is matters only when it may not be taken
                row = db.execute(self.q.Q_LEASE_OF, (tenant_id, run_id)).fetchone()
                _, holder, expires = row if row is not None else (None, None, None)
                if holder not in (None, owner) and expires is not None and expires > now:
                    raise LeaseConflictError(
                        f"run {run_id!r} is leased to {holder!r} for another "
                        f"{expires - now:.1f}s; wait for the lease to expire or stop that worker"
                    )
            taken = db.execute(
                self.q.Q_TAKE_LEASE, (owner, now + lease_seconds, tenant_id, run_id)
            ).fetchone()
            if taken is None:
                raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
        return int(taken[0])

    def release(self, tenant_id: str, run_id: str, token: int) -> None:
        with self._lease_tx(tenant_id) as db:
            db.execute(self.q.Q_RELEASE, (tenant_id, run_id, token))

    # -- commits ----------------------------------------------------------------------

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        started = time.perf_counter()
        batch = self._sealed(tenant_id, run_id, batch)  # the meter counts what is stored
        with self._tx(tenant_id) as db:
            now = time.time()
            self._create(db, tenant_id, run_id, batch)
            self._fence(db, tenant_id, run_id, token, batch, now)
            self._write(db, [((tenant_id, run_id), token, batch)], now)
        observe.committed((tenant_id,), started)  # wayline.commit.duration

    def commit_many(
        self, items: Sequence[tuple[str, str, int, CommitBatch]]
    ) -> list[BaseException | None]:
        """Several runs' batches in one transaction: one fsync (``wayline.store.sql_group``)."""
        from wayline.store.sql_group import commit_group

        started = time.perf_counter()
        errors = commit_group(self, [(t, r, tok, self._sealed(t, r, b)) for t, r, tok, b in items])
        observe.committed([i[0] for i, e in zip(items, errors, strict=True) if e is None], started)
        return errors

    def _rescope(self, db: Executor, tenant: str) -> None:
        """Name the tenant of the next statements where the backend enforces tenancy itself
        (PostgreSQL row-level security); a group transaction spans several tenants."""

    def _create(self, db: Executor, tenant_id: str, run_id: str, batch: CommitBatch) -> None:
        """Insert the run row a batch creates (born claimed, token 1), or RunExistsError."""
        new = batch.create
        if new is None:
            return
        row = self._insert_run(
            db,
            tenant_id,
            run_id,
            new.graph_name,
            new.graph_version,
            new.durability,
            new.schema_version,
            subject=new.subject,
            classes=new.classes,
            incarnation=new.incarnation,
            lease=(new.owner, new.lease_seconds),
            identity=(new.fingerprint, new.shape),
        )
        if row is None:
            raise RunExistsError(run_id)

    def _fence(
        self, db: Executor, tenant_id: str, run_id: str, token: int, batch: CommitBatch, now: float
    ) -> None:
        """Update the run row if ``token`` is still the run's fencing token, else LeaseLost."""
        query, params = first_fence(self.q, (tenant_id, run_id), token, batch, now)
        cur = db.execute(query, params)
        if cur.rowcount != 1 and query is self.q.Q_FENCE_STEP:  # the status changes, or
            query, params = fence_params(self.q, (tenant_id, run_id), token, batch, now, "")
            cur = db.execute(query, params)  # the lease is gone
        if cur.rowcount != 1:
            raise LeaseLost(run_id, token)

    def _write(
        self, db: Executor, fenced: Sequence[tuple[tuple[str, str], int, CommitBatch]], now: float
    ) -> None:
        """The rows of fenced, sealed batches (one run's, or a group's: one statement per
        kind of row for the whole group where the rows allow it)."""
        q = self.q
        rows: list[tuple[Any, ...]]
        rows = [
            (*key, d.step, d.payload, token, d.sizes(), crc(("deltas", *key, d.step), d.payload))
            for key, token, batch in fenced
            for d in batch.deltas
        ]
        if rows:
            self._put_deltas(db, rows)
        snapshots: list[tuple[Any, ...]] = []
        meter: list[tuple[Any, ...]] = []
        for key, token, batch in fenced:
            tenant_id = key[0]
            if batch.clear_pending_through is not None:
                db.execute(q.Q_CLEAR_PENDING, (*key, batch.clear_pending_through))
                db.execute(q.Q_CLEAR_INTERRUPTS, (*key, batch.clear_pending_through))
            if batch.pending:
                rows = [
                    (
                        *key,
                        p.step,
                        p.task_id,
                        p.payload,
                        crc(("pending_writes", *key, p.step, p.task_id), p.payload),
                    )
                    for p in batch.pending
                ]
                db.executemany(q.Q_PUT_PENDING, rows)
            if batch.interrupts:
                rows = [_interrupt_row(key, i) for i in batch.interrupts]
                db.executemany(q.Q_PUT_INTERRUPT, rows)
            for entry in batch.audit:
                db.execute(q.Q_APPEND_AUDIT, _audit_row(entry, now))
            if batch.versions is not None:
                db.execute(q.Q_SET_VERSIONS, (*batch.versions, *key, token))
            if batch.wake is not None:
                db.execute(q.Q_SET_WAKE, (batch.wake.at, batch.wake.at, *key, token))
            metered = batch.meter()
            new = self._new_segments(db, key, batch.segments) if batch.segments else []
            steps = {s.step for s in batch.snapshots}
            metered.extend(m for seg in new if seg.step not in steps for m in seg.meter())
            snapshots.extend(
                (
                    *key,
                    s.step,
                    s.payload,
                    s.sizes(seg for seg in new if seg.step == s.step),
                    crc(("snapshots", *key, s.step), s.payload),
                )
                for s in batch.snapshots
            )
            for blob in batch.blobs:
                check = crc(("blobs", tenant_id, blob.digest), blob.payload)
                params = (tenant_id, blob.digest, blob.payload, check)
                if db.execute(q.Q_PUT_BLOB, params).rowcount == 1:
                    metered.extend(blob.meter())
                db.execute(q.Q_PUT_BLOB_REF, (*key, blob.digest))
            meter.extend((*key, m.step, m.table, m.channel, m.bytes) for m in metered)
            for w in batch.effects:  # an intent or an outcome, conditional on the status
                if w.record.tenant_id != tenant_id:
                    raise TenantMismatchError(
                        f"run {key[1]!r} of tenant {tenant_id!r} cannot write effect "
                        f"{w.record.key!r} of tenant {w.record.tenant_id!r}"
                    )
                if not self._put_effect(db, key[1], w.record, w.expect, now):
                    raise EffectRecordChanged(w.record.key, w.expect)
            if batch.memory:  # a node's long-term memory writes commit with its step
                self._memory_write(db, tenant_id, key[1], batch.memory, now)
        if snapshots:
            db.executemany(q.Q_PUT_SNAPSHOT, snapshots)
        if meter:
            self._put_meter(db, meter)

    def _new_segments(
        self, db: Executor, key: tuple[str, str], segments: Sequence[SegmentRecord]
    ) -> list[SegmentRecord]:
        """Insert segments (immutable and deterministic: written at most once); those that
        were not there yet, each once, to be metered as they were inserted once."""
        rows = [
            (
                *key,
                seg.seg_id,
                seg.channel,
                seg.level,
                seg.first_step,
                seg.last_step,
                seg.payload,
                crc(("segments", *key, seg.seg_id), seg.payload),
            )
            for seg in segments
        ]
        inserted = self._put_segments(db, rows)
        new = []
        for seg in segments:
            if seg.seg_id in inserted:
                inserted.discard(seg.seg_id)
                new.append(seg)
        return new

    def _put_deltas(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert delta rows (PostgreSQL sends several as one statement)."""
        db.executemany(self.q.Q_INSERT_DELTA, rows)

    def _put_meter(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        db.executemany(self.q.Q_PUT_METER, rows)

    def _put_segments(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> set[str]:
        """Insert segment rows that are not there yet; the ids of those inserted (metered)."""
        return {row[2] for row in rows if db.execute(self.q.Q_PUT_SEGMENT, row).rowcount == 1}

    def _sealed(self, t: str, r: str, batch: CommitBatch) -> CommitBatch:
        """The batch with every payload as it will be stored (sealed, when encrypted)."""
        if not self.encrypted:
            return batch
        seal = self.payloads.sealer.seal
        return dataclasses.replace(
            batch,
            deltas=[_re(d, payload=seal(t, f"{r}|d", d.payload)) for d in batch.deltas],
            snapshots=[_re(s, payload=seal(t, f"{r}|s", s.payload)) for s in batch.snapshots],
            segments=[_re(s, payload=seal(t, f"{r}|g", s.payload)) for s in batch.segments],
            blobs=[_re(b, payload=seal(t, f"b|{b.digest}", b.payload)) for b in batch.blobs],
            pending=[_re(p, payload=seal(t, f"{r}|p", p.payload)) for p in batch.pending],
            interrupts=[
                _re(
                    i,
                    value=seal(t, f"{r}|i", i.value),
                    resume=None if i.resume is None else seal(t, f"{r}|i", i.resume),
                )
                for i in batch.interrupts
            ],
        )

    # -- effects ----------------------------------------------------------------------

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None:
        rows = self._read(self.q.Q_GET_EFFECT, (tenant_id, key), tenant=tenant_id)
        return self._effect(rows[0]) if rows else None

    def list_effects(self, tenant_id: str, run_id: str) -> list[EffectRecord]:
        return [
            self._effect(r)
            for r in self._read(self.q.Q_LIST_EFFECTS, (tenant_id, run_id), tenant=tenant_id)
        ]

    def put_effect(
        self,
        run_id: str,
        token: int | None,
        record: EffectRecord,
        *,
        expect: EffectStatus | None,
    ) -> bool:
        """Write ``record`` if it is still in status ``expect`` (None: absent). With a
        ``token``, only while it is ``run_id``'s current fencing token (else LeaseLost);
        without one it is an operator's resolution. False: someone else changed it first.
        (A run's own effect writes go through ``commit``, as a batch's ``effects``.)"""
        if token is not None:  # the run's own write: the same fenced path as its commits
            batch = CommitBatch(effects=[EffectWrite(record, expect)])
            try:  # not self.commit, which instrumentation may wrap: traced once, as an effect
                SQLStore.commit(self, record.tenant_id, run_id, token, batch)
            except EffectRecordChanged:
                return False
            return True
        with self._tx(record.tenant_id) as db:
            return self._put_effect(db, run_id, record, expect, time.time())

    def _put_effect(
        self,
        db: Executor,
        run_id: str,
        record: EffectRecord,
        expect: EffectStatus | None,
        now: float,
    ) -> bool:
        """The effect row, if the stored one is in status ``expect``; its result metered."""
        q = self.q
        t = record.tenant_id
        result, result_crc = self.payloads.put_opt(
            ("effects", t, record.key), t, f"e|{record.key}", record.result
        )
        if expect is None:
            row = {**_effect_row(record), "result": result, "result_crc": result_crc}
            row.update(created_at=now, updated_at=now)
            cur = db.execute(q.Q_INSERT_EFFECT, [row[c] for c in q.EFFECT_COLUMN_NAMES])
        else:
            cur = db.execute(
                q.Q_UPDATE_EFFECT,
                (
                    record.attempt,
                    record.status,
                    record.fencing_token,
                    result,
                    record.error,
                    now,
                    result_crc,
                    t,
                    record.key,
                    expect,
                ),
            )
        if cur.rowcount != 1:
            return False
        if result is not None:
            meter = _re(record, result=result).meter()[0]
            db.execute(
                q.Q_PUT_METER, (t, run_id, meter.step, meter.table, meter.channel, meter.bytes)
            )
        return True

    # -- reads ------------------------------------------------------------------------

    def load_snapshot(
        self, tenant_id: str, run_id: str, at_or_before: int
    ) -> SnapshotRecord | None:
        rows = self._read(
            self.q.Q_LOAD_SNAPSHOT, (tenant_id, run_id, at_or_before), tenant=tenant_id
        )
        if not rows:
            return None
        step, stored, crc = rows[0]
        ident = ("snapshots", tenant_id, run_id, step)
        return SnapshotRecord(step, self.payloads.get(ident, tenant_id, f"{run_id}|s", stored, crc))

    def load_deltas(
        self, tenant_id: str, run_id: str, after: int, through: int
    ) -> list[DeltaRecord]:
        rows = self._read(
            self.q.Q_LOAD_DELTAS, (tenant_id, run_id, after, through), tenant=tenant_id
        )
        get, aad = self.payloads.get, f"{run_id}|d"
        return [
            DeltaRecord(
                step,
                get(("deltas", tenant_id, run_id, step), tenant_id, aad, data, crc),
                fencing_token=tok,
            )
            for step, data, tok, crc in rows
        ]

    def load_pending(self, tenant_id: str, run_id: str, step: int) -> list[PendingWriteRecord]:
        rows = self._read(self.q.Q_LOAD_PENDING, (tenant_id, run_id, step), tenant=tenant_id)
        get, aad = self.payloads.get, f"{run_id}|p"
        return [
            PendingWriteRecord(
                s, t, get(("pending_writes", tenant_id, run_id, s, t), tenant_id, aad, p, crc)
            )
            for s, t, p, crc in rows
        ]

    def load_interrupts(self, tenant_id: str, run_id: str, step: int) -> list[InterruptRecord]:
        rows = self._read(self.q.Q_LOAD_INTERRUPTS, (tenant_id, run_id, step), tenant=tenant_id)
        p, aad = self.payloads, f"{run_id}|i"
        return [
            InterruptRecord(
                step=s,
                task_id=t,
                idx=i,
                interrupt_id=iid,
                value=p.get(_question_ident(tenant_id, run_id, iid), tenant_id, aad, v, crc),
                resume=p.get_opt(_answer_ident(tenant_id, run_id, iid), tenant_id, aad, r, rcrc),
                digest=digest,
                approvers=_approvers(_question_ident(tenant_id, run_id, iid), approvers),
                expires_at=expires,
                cls=cls,
                on_expire=on_expire,
            )
            for s, t, i, iid, v, r, digest, approvers, expires, crc, rcrc, cls, on_expire in rows
        ]

    def answer_interrupt(
        self, tenant_id: str, run_id: str, interrupt_id: str, resume: bytes, audit: AuditRecord
    ) -> bool:
        """Record a decision on an open interrupt and its audit line, in one transaction.
        False (and nothing written) if it was answered already."""
        now = time.time()
        ident = _answer_ident(tenant_id, run_id, interrupt_id)
        stored, crc = self.payloads.put(ident, tenant_id, f"{run_id}|i", resume)
        with self._tx(tenant_id) as db:
            params = (stored, crc, tenant_id, run_id, interrupt_id)
            if db.execute(self.q.Q_ANSWER_INTERRUPT, params).rowcount != 1:
                return False
            db.execute(self.q.Q_APPEND_AUDIT, _audit_row(audit, now))
            db.execute(self.q.Q_PUT_METER, (tenant_id, run_id, -1, "interrupts", "", len(stored)))
        return True

    def append_audit(self, entry: AuditRecord) -> None:
        with self._tx(entry.tenant_id) as db:
            db.execute(self.q.Q_APPEND_AUDIT, _audit_row(entry, time.time()))

    def load_audit(self, tenant_id: str, run_id: str) -> list[AuditRecord]:
        return [
            AuditRecord(*row)
            for row in self._read(self.q.Q_LOAD_AUDIT, (tenant_id, run_id), tenant=tenant_id)
        ]

    def load_segments(self, tenant_id: str, run_id: str, seg_ids: list[str]) -> list[bytes]:
        found: dict[str, tuple[Any, Any]] = {}
        for i in range(0, len(seg_ids), 500):  # one round trip per 500 segments
            chunk = seg_ids[i : i + 500]
            query = self.q.Q_LOAD_SEGMENTS.format(marks=", ".join([self.placeholder] * len(chunk)))
            for seg_id, stored, check in self._read(query, (tenant_id, run_id, *chunk), tenant_id):
                found[seg_id] = (stored, check)
        out = []
        for seg_id in seg_ids:
            ident = ("segments", tenant_id, run_id, seg_id)
            if seg_id not in found:
                raise CorruptionError.of(ident, "the segment a snapshot refers to is missing")
            stored, crc = found[seg_id]
            out.append(self.payloads.get(ident, tenant_id, f"{run_id}|g", stored, crc))
        return out

    def load_blob(self, tenant_id: str, digest: str) -> bytes:
        rows = self._read(self.q.Q_LOAD_BLOB, (tenant_id, digest), tenant=tenant_id)
        ident = ("blobs", tenant_id, digest)
        if not rows:
            raise CorruptionError.of(ident, "a value refers to this blob, which is missing")
        stored, crc = rows[0]
        return self.payloads.get(ident, tenant_id, f"b|{digest}", stored, crc)

    def load_meter(self, tenant_id: str, run_id: str) -> list[MeterRow]:
        rows = self._read(self.q.Q_LOAD_METER, (tenant_id, run_id), tenant=tenant_id)
        meter = [MeterRow(step, tbl, ch, n) for step, tbl, ch, n in rows]
        for table, query in (
            ("deltas", self.q.Q_LOAD_DELTA_SIZES),
            ("snapshots", self.q.Q_LOAD_SNAPSHOT_SIZES),
        ):
            for step, sizes in self._read(query, (tenant_id, run_id), tenant=tenant_id):
                meter.extend(_carried_meter((table, tenant_id, run_id, step), sizes))
        return sorted(meter, key=lambda m: m.step)  # stable: write order within a step

    def held_bytes(self, tenant_id: str, run_id: str) -> dict[str, int]:
        """Payload bytes the run's rows hold now, per metered table (an audit of the meter:
        equal to what the meter counted for tables whose rows were never replaced)."""
        params = (tenant_id, run_id) * self.q.HELD_BYTES_PARAMS
        return {t: int(n) for t, n in self._read(self.q.Q_HELD_BYTES, params, tenant=tenant_id)}

    def dump_run(self, tenant_id: str, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every row the store holds for a run, table by table, as stored (payloads are
        codec bytes); blobs it references under ``blobs``. For export and for audits."""
        key = (tenant_id, run_id)
        out = {}
        for table in self.q.RUN_TABLES:
            rows = self._read_dicts(self.q.Q_DUMP.format(table=table), key, tenant=tenant_id)
            out[table] = [self._open_row(table, tenant_id, run_id, row) for row in rows]
        out["blobs"] = [
            {
                "digest": d,
                "payload": self.payloads.get(("blobs", tenant_id, d), tenant_id, f"b|{d}", p, crc),
            }
            for d, p, crc in self._read(self.q.Q_DUMP_BLOBS, key, tenant=tenant_id)
        ]
        return out

    def count_rows(self, tenant_id: str, run_id: str) -> dict[str, int]:
        key = (tenant_id, run_id)
        counts = {}
        for table in self.q.RUN_TABLES:
            query = self.q.Q_COUNT_ROWS.format(table=table)
            ((n,),) = self._read(query, key, tenant=tenant_id)
            counts[table] = int(n)
        counts["blobs"] = counts["blob_refs"]  # each reference names one blob of the tenant
        return counts

    def check_rows(self, tenant_id: str, run_id: str) -> tuple[int, list[CorruptionError]]:
        """Every payload row of a run verified (its checksum; opened, when sealed), its
        steps' deltas all present and its blobs all there: every problem found, not only
        the first. Returns (rows checked, problems). Writes nothing."""
        key = (tenant_id, run_id)
        problems: list[CorruptionError] = []
        checked = 0
        steps: list[int] = []
        last = -1
        for table in self.q.RUN_TABLES:
            rows = self._read_dicts(self.q.Q_DUMP.format(table=table), key, tenant=tenant_id)
            for row in rows:
                checked += 1
                if table == "deltas":
                    steps.append(int(row["step"]))
                elif table == "runs":
                    last = int(row["step"])
                for column, crc_column, ident, aad in _payload_columns(table, *key, row):
                    problems.extend(
                        self._check(ident, tenant_id, aad, row[column], row[crc_column])
                    )
        present = set(steps)
        problems.extend(
            CorruptionError.of(("deltas", *key, step), "the row is missing")
            for step in range(0, last + 1)
            if step not in present
        )
        found = set()
        for digest, payload, crc_ in self._read(self.q.Q_DUMP_BLOBS, key, tenant=tenant_id):
            checked += 1
            found.add(digest)
            problems.extend(
                self._check(("blobs", tenant_id, digest), tenant_id, f"b|{digest}", payload, crc_)
            )
        for (digest,) in self._read(self.q.Q_BLOBS_OF_RUN, key, tenant=tenant_id):
            if digest not in found:
                problems.append(
                    CorruptionError.of(("blobs", tenant_id, digest), "the row is missing")
                )
        return checked, problems

    def _check(
        self, ident: tuple[Any, ...], tenant_id: str, aad: str, stored: Any, crc_: int | None
    ) -> list[CorruptionError]:
        try:
            self.payloads.get_opt(ident, tenant_id, aad, stored, crc_)
        except CorruptionError as exc:
            return [exc]
        except CodecError as exc:  # sealed, but it does not open (key, tampering)
            return [CorruptionError.of(ident, str(exc))]
        return []

    def _open_row(
        self, table: str, tenant_id: str, run_id: str, row: dict[str, Any]
    ) -> dict[str, Any]:
        """A dumped row with its payload columns verified and opened (checksums dropped)."""
        out = {k: v for k, v in row.items() if not k.endswith("crc")}
        for column, crc_column, ident, aad in _payload_columns(table, tenant_id, run_id, row):
            out[column] = self.payloads.get_opt(ident, tenant_id, aad, row[column], row[crc_column])
        return out

    def runs_before(self, tenant_id: str, before: float, statuses: Sequence[str]) -> list[str]:
        """Ids of the tenant's runs in one of ``statuses`` last updated before ``before``."""
        marks = ", ".join([self.placeholder] * len(statuses))
        query = self.q.Q_RUNS_BEFORE.format(statuses=marks)
        return [r for (r,) in self._read(query, (tenant_id, before, *statuses), tenant=tenant_id)]

    def _read_dicts(
        self, query: str, params: Sequence[Any], tenant: str | None = None
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def purge_run(self, tenant_id: str, run_id: str) -> int:
        """Delete every row of a run, and the blobs no other run of the tenant references,
        in one transaction. Returns the number of rows deleted."""
        key = (tenant_id, run_id)
        with self._tx(tenant_id) as db:
            digests = [d for (d,) in db.execute(self.q.Q_BLOBS_OF_RUN, key).fetchall()]
            deleted = sum(db.execute(query, key).rowcount for query in self.q.Q_PURGE)
            for i in range(0, len(digests), 500):
                chunk = digests[i : i + 500]
                marks = ", ".join([self.placeholder] * len(chunk))
                query = self.q.Q_PURGE_ORPHAN_BLOBS.format(marks=marks)
                deleted += db.execute(query, (tenant_id, *chunk)).rowcount
        return deleted


def first_fence(
    q: SimpleNamespace, key: tuple[str, str], token: int, batch: CommitBatch, now: float
) -> tuple[str, tuple[Any, ...]]:
    """The fenced update to try first: a step of a held run keeps its status (``running``),
    so the cheaper query that does not assign it; a status change has no cheaper one (and a
    row the batch creates is ``pending``: its first step changes the status)."""
    moves = batch.create is not None or (batch.run is not None and batch.run.status != "running")
    return fence_params(q, key, token, batch, now, "" if moves else None)


def fence_params(
    q: SimpleNamespace,
    key: tuple[str, str],
    token: int,
    batch: CommitBatch,
    now: float,
    status: str | None,
) -> tuple[str, tuple[Any, ...]]:
    """The fenced update of a run row a batch makes, and its parameters. ``status`` is the
    row's current status when known ("" when known to differ, None when unknown: try the
    cheaper query that keeps it first)."""
    run = batch.run
    take = 1 if batch.take_inbox else 0
    if run is None:
        return q.Q_FENCE_TOUCH, (now, take, *key, token)
    nodes = nodes_json(tuple(run.next_nodes))  # a tuple as declared: tuple() returns it
    step = (run.step, nodes, run.error, run.state_digest, now, take)
    if status is None or status == run.status:
        return q.Q_FENCE_STEP, (*step, *key, token, run.status)
    return q.Q_FENCE_UPDATE, (run.status, *step, run.status, run.status, *key, token)


def created_params(key: tuple[str, str], batch: CommitBatch, now: float) -> tuple[Any, ...]:
    """The row of a run that ``batch`` creates as its first step leaves it (the row
    ``_create`` inserts, after the step's fenced update), for a backend that writes both in
    one statement: tenant, run, graph, version, status, step, next nodes, durability, lease
    owner and expiry (none once settled), error, digest, times, schema version,
    incarnation, queued time, subject, classes, fingerprint, shape."""
    new, run = batch.create, batch.run
    assert new is not None and run is not None
    held = run.status not in SETTLED_STATUSES
    owner, expires = (new.owner, now + new.lease_seconds) if held else (None, None)
    nodes = nodes_json(tuple(run.next_nodes))
    return (
        *key,
        new.graph_name,
        new.graph_version,
        run.status,
        run.step,
        nodes,
        new.durability,
        owner,
        expires,
        run.error,
        run.state_digest,
        now,
        now,
        new.schema_version,
        new.incarnation,
        now,
        new.subject,
        _classes_json(new.classes),
        new.fingerprint,
        new.shape,
    )


@functools.lru_cache(maxsize=1024)
def nodes_json(nodes: tuple[str, ...]) -> str:
    """A run row's ``next_nodes`` column: a graph has a few such lists, every step writes one."""
    return json.dumps(list(nodes))


def _carried_meter(ident: tuple[str, str, str, int], sizes: str) -> list[MeterRow]:
    """The meter rows a delta row (``[channel, bytes]`` items) or a snapshot row (``[table,
    channel, bytes]``) carries in its ``sizes``."""
    table, step = ident[0], ident[3]

    def rows(items: Any) -> list[MeterRow]:
        if table == "deltas":
            return [MeterRow(step, table, str(ch), int(n)) for ch, n in items]
        return [MeterRow(step, str(tbl), str(ch), int(n)) for tbl, ch, n in items]

    return json_column(ident, sizes, "its byte counts (sizes)", rows)


def _approvers(ident: tuple[str, ...], stored: str | None) -> tuple[str, ...] | None:
    """Who may decide a question (None: anyone of the tenant); a column that cannot be
    read is the question's corruption, never a guess at who may decide."""
    if stored is None:
        return None
    return json_column(ident, stored, "who may decide it", lambda v: tuple(str(w) for w in v))


def _interrupt_row(key: tuple[str, str], i: InterruptRecord) -> tuple[Any, ...]:
    """An interrupt's row, its payloads as stored (sealed already) with their checksums."""
    t, r = key
    approvers = None if i.approvers is None else json.dumps(list(i.approvers))
    answer = None if i.resume is None else crc(_answer_ident(t, r, i.interrupt_id), i.resume)
    return (
        *key,
        i.step,
        i.task_id,
        i.idx,
        i.interrupt_id,
        i.value,
        i.resume,
        i.digest,
        approvers,
        i.expires_at,
        crc(_question_ident(t, r, i.interrupt_id), i.value),
        answer,
        i.cls,
        i.on_expire,
    )


def _classes_json(classes: Mapping[str, str] | None) -> str:
    return json.dumps(dict(sorted((classes or {}).items())), separators=(",", ":"))


def _re(record: Any, **changes: Any) -> Any:
    return dataclasses.replace(record, **changes)


def _inbox_ident(tenant_id: str, run_id: str) -> tuple[str, ...]:
    return ("runs", tenant_id, run_id, "inbox")


def _question_ident(tenant_id: str, run_id: str, interrupt_id: str) -> tuple[str, ...]:
    return ("interrupts", tenant_id, run_id, interrupt_id, "value")


def _answer_ident(tenant_id: str, run_id: str, interrupt_id: str) -> tuple[str, ...]:
    return ("interrupts", tenant_id, run_id, interrupt_id, "resume")


def _payload_columns(
    table: str, t: str, r: str, row: dict[str, Any]
) -> list[tuple[str, str, tuple[Any, ...], str]]:
    """(column, checksum column, row identity, sealing context) of each payload column of a
    row of ``table``: the same identities the write path uses."""
    if table == "runs":
        return [("inbox", "inbox_crc", _inbox_ident(t, r), f"{r}|n")]
    if table == "deltas":
        return [("payload", "crc", ("deltas", t, r, row["step"]), f"{r}|d")]
    if table == "snapshots":
        return [("payload", "crc", ("snapshots", t, r, row["step"]), f"{r}|s")]
    if table == "segments":
        return [("payload", "crc", ("segments", t, r, row["seg_id"]), f"{r}|g")]
    if table == "pending_writes":
        ident = ("pending_writes", t, r, row["step"], row["task_id"])
        return [("payload", "crc", ident, f"{r}|p")]
    if table == "interrupts":
        iid = row["interrupt_id"]
        return [
            ("value", "crc", _question_ident(t, r, iid), f"{r}|i"),
            ("resume", "resume_crc", _answer_ident(t, r, iid), f"{r}|i"),
        ]
    if table == "effects":
        key = row["effect_key"]
        return [("result", "result_crc", ("effects", t, key), f"e|{key}")]
    if table == "stream_events":
        return [("payload", "crc", stream_event_ident(t, r, row["seq"]), f"{r}|v")]
    return lg_payload_columns(table, t, r, row)


def _audit_row(e: AuditRecord, now: float) -> tuple[Any, ...]:
    return (e.tenant_id, e.run_id, e.at or now, e.actor, e.action, e.digest, e.outcome, e.detail)


def _effect_row(record: EffectRecord) -> dict[str, Any]:
    """An effect record by column name (``key`` is stored as ``effect_key``)."""
    row = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    row["effect_key"] = row.pop("key")
    return row
