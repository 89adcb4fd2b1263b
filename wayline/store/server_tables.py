"""The HTTP server's rows: API keys, threads and the runs started through the API.

Kept beside the ``Store`` protocol rather than in it: only ``wayline serve`` and
``wayline keys`` need them, and they hold no run payload (a thread's state is the wayline
run of the same id, read through the store interface like any other). The SQL is in
``wayline.store.sql.server_queries``; rows map to records by column name.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Literal

from wayline.errors import StoreError
from wayline.store.base import Store
from wayline.store.payloads import json_column
from wayline.store.sql import server_queries
from wayline.store.sql_core import Executor
from wayline.store.sql_store import SQLStore

__all__ = ["ApiKeyRecord", "ServerTables", "ThreadRecord", "ThreadRunRecord", "server_tables"]

ThreadRunStatus = Literal["pending", "running", "success", "error", "timeout", "interrupted"]


@dataclasses.dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    tenant_id: str
    key_id: str
    key_hash: str
    actor: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...]
    label: str
    created_at: float
    revoked_at: float | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ApiKeyRecord:
        return cls(
            tenant_id=row["tenant_id"],
            key_id=row["key_id"],
            key_hash=row["key_hash"],
            actor=row["actor"],
            roles=_split(row["roles"]),
            scopes=_split(row["scopes"]),
            label=row["label"],
            created_at=float(row["created_at"]),
            revoked_at=None if row["revoked_at"] is None else float(row["revoked_at"]),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadRecord:
    tenant_id: str
    thread_id: str
    metadata: dict[str, Any]
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ThreadRecord:
        return cls(
            tenant_id=row["tenant_id"],
            thread_id=row["thread_id"],
            metadata=_object(("threads", row["tenant_id"], row["thread_id"]), row["metadata"]),
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ThreadRunRecord:
    """One run asked for through the API: an input (or a resume) handed to the thread's
    wayline run, from ``start_step`` on."""

    tenant_id: str
    run_id: str
    thread_id: str
    assistant_id: str
    status: ThreadRunStatus
    start_step: int
    metadata: dict[str, Any]
    kwargs: dict[str, Any]
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ThreadRunRecord:
        return cls(
            tenant_id=row["tenant_id"],
            run_id=row["run_id"],
            thread_id=row["thread_id"],
            assistant_id=row["assistant_id"],
            status=row["status"],
            start_step=int(row["start_step"]),
            metadata=_object(("thread_runs", row["tenant_id"], row["run_id"]), row["metadata"]),
            kwargs=_object(("thread_runs", row["tenant_id"], row["run_id"]), row["kwargs"]),
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
        )


def _object(ident: tuple[str, str, str], stored: str) -> dict[str, Any]:
    """A JSON object column of an API row (``json_column``: named when it cannot be read)."""
    return json_column(ident, stored, "a JSON column", dict)


def _split(text: str) -> tuple[str, ...]:
    return tuple(p for p in text.split(",") if p)


class ServerTables:
    """The server's queries over an SQL store's connections and transactions."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store
        ph = store.placeholder
        names = {k: v for k, v in vars(server_queries).items() if k.startswith("Q_")}
        self.q = SimpleNamespace(**{k: v.replace("?", ph) for k, v in names.items()})

    def _rows(
        self, query: str, params: tuple[Any, ...], tenant: str | None
    ) -> list[dict[str, Any]]:
        backend: Any = self.store  # both SQL backends read rows by name
        rows: list[dict[str, Any]] = backend._read_dicts(query, params, tenant)
        return rows

    def _write(self, query: str, params: tuple[Any, ...], tenant: str) -> int:
        """One statement, committed durably; on SQLite it rides the transaction in flight
        when there is one (``wayline.store.sqlite_riders``) instead of an fsync of its own."""
        return self.store._ride(tenant, lambda db: int(db.execute(query, params).rowcount))

    # -- keys -------------------------------------------------------------------------

    def insert_key(self, record: ApiKeyRecord) -> None:
        r = record
        params = (
            r.tenant_id,
            r.key_id,
            r.key_hash,
            r.actor,
            ",".join(r.roles),
            ",".join(r.scopes),
            r.label,
            r.created_at,
        )
        self._write(self.q.Q_INSERT_KEY, params, r.tenant_id)

    def find_key(self, key_id: str) -> ApiKeyRecord | None:
        """The one lookup without a tenant: a key is how a request's tenant is learned."""
        # Under row-level security the key's tenant is not known yet: the one function the
        # tables' owner defined for it (rls.sql) finds the key by id, and nothing else.
        query = self.q.Q_FIND_KEY_RLS if getattr(self.store, "rls", False) else self.q.Q_FIND_KEY
        rows = self._rows(query, (key_id,), None)
        return ApiKeyRecord.from_row(rows[0]) if rows else None

    def list_keys(self, tenant_id: str) -> list[ApiKeyRecord]:
        return [
            ApiKeyRecord.from_row(r)
            for r in self._rows(self.q.Q_LIST_KEYS, (tenant_id,), tenant_id)
        ]

    def revoke_key(self, tenant_id: str, key_id: str) -> bool:
        return self._write(self.q.Q_REVOKE_KEY, (time.time(), tenant_id, key_id), tenant_id) == 1

    # -- threads ----------------------------------------------------------------------

    def insert_thread(
        self, tenant_id: str, thread_id: str, metadata: dict[str, Any], *, now: float | None = None
    ) -> bool:
        """False when the thread exists already. ``now``: its creation time (default: now)."""
        now = time.time() if now is None else now
        params = (tenant_id, thread_id, json.dumps(metadata), now, now)
        return self._write(self.q.Q_INSERT_THREAD, params, tenant_id) == 1

    def get_thread(self, tenant_id: str, thread_id: str) -> ThreadRecord | None:
        rows = self._rows(self.q.Q_GET_THREAD, (tenant_id, thread_id), tenant_id)
        return ThreadRecord.from_row(rows[0]) if rows else None

    def search_threads(self, tenant_id: str, *, limit: int, offset: int) -> list[ThreadRecord]:
        rows = self._rows(self.q.Q_SEARCH_THREADS, (tenant_id, limit, offset), tenant_id)
        return [ThreadRecord.from_row(r) for r in rows]

    def count_threads(self, tenant_id: str) -> int:
        rows = self.store._read(self.q.Q_COUNT_THREADS, (tenant_id,), tenant_id)
        return int(rows[0][0])

    def update_thread(self, tenant_id: str, thread_id: str, metadata: dict[str, Any]) -> None:
        params = (json.dumps(metadata), time.time(), tenant_id, thread_id)
        self._write(self.q.Q_UPDATE_THREAD, params, tenant_id)

    def delete_thread(self, tenant_id: str, thread_id: str) -> int:
        with self.store._tx(tenant_id) as db:
            runs = db.execute(self.q.Q_DELETE_THREAD_RUNS, (tenant_id, thread_id)).rowcount
            return int(db.execute(self.q.Q_DELETE_THREAD, (tenant_id, thread_id)).rowcount) + int(
                runs
            )

    # -- the API's runs ---------------------------------------------------------------

    def insert_run(
        self,
        r: ThreadRunRecord,
        *,
        tags: dict[str, Any] | None = None,
        then: Callable[[Executor], None] | None = None,
    ) -> None:
        """Record an API run, touching its thread (``tags``: the thread's new metadata,
        written with it); ``then`` writes the rest of what accepting the run writes (its
        input, for a worker) in the same transaction: one commit, all or nothing."""
        params = (
            r.tenant_id,
            r.run_id,
            r.thread_id,
            r.assistant_id,
            r.status,
            r.start_step,
            json.dumps(r.metadata),
            json.dumps(r.kwargs),
            r.created_at,
            r.updated_at,
        )

        def write(db: Executor) -> None:
            db.execute(self.q.Q_INSERT_RUN, params)
            if tags is None:
                db.execute(self.q.Q_UPDATE_THREAD_TOUCH, (r.updated_at, r.tenant_id, r.thread_id))
            else:
                touch = (json.dumps(tags), r.updated_at, r.tenant_id, r.thread_id)
                db.execute(self.q.Q_UPDATE_THREAD, touch)
            if then is not None:
                then(db)

        self.store._ride(r.tenant_id, write)

    def get_run(self, tenant_id: str, thread_id: str, run_id: str) -> ThreadRunRecord | None:
        rows = self._rows(self.q.Q_GET_RUN, (tenant_id, thread_id, run_id), tenant_id)
        return ThreadRunRecord.from_row(rows[0]) if rows else None

    def latest_run(self, tenant_id: str, thread_id: str) -> ThreadRunRecord | None:
        rows = self._rows(self.q.Q_LATEST_RUN, (tenant_id, thread_id), tenant_id)
        return ThreadRunRecord.from_row(rows[0]) if rows else None

    def list_runs(
        self,
        tenant_id: str,
        thread_id: str,
        *,
        status: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[ThreadRunRecord]:
        params = (tenant_id, thread_id, status, status, limit, offset)
        return [
            ThreadRunRecord.from_row(r) for r in self._rows(self.q.Q_LIST_RUNS, params, tenant_id)
        ]

    def next_start_step(self, tenant_id: str, thread_id: str, after: float) -> int | None:
        """The first step of the thread's runs created after ``after`` (None: none was)."""
        rows = self.store._read(self.q.Q_NEXT_START_STEP, (tenant_id, thread_id, after), tenant_id)
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def delete_run(self, tenant_id: str, run_id: str) -> bool:
        return self._write(self.q.Q_DELETE_RUN, (tenant_id, run_id), tenant_id) == 1

    def set_start_step(self, tenant_id: str, run_id: str, step: int) -> bool:
        """Record where a queued run began (only a row that has not started changes)."""
        params = (step, time.time(), tenant_id, run_id)
        return self._write(self.q.Q_SET_START_STEP, params, tenant_id) == 1

    def settle_run(self, tenant_id: str, run_id: str, status: ThreadRunStatus) -> bool:
        """Record a run's final status once (only a pending or running row changes), durably:
        a status nothing else records (a cancel)."""
        params = (status, time.time(), tenant_id, run_id)
        return self._write(self.q.Q_SET_RUN_STATUS, params, tenant_id) == 1

    def record_settled(self, tenant_id: str, run_id: str, status: ThreadRunStatus) -> None:
        """Record a final status read off the store's own durable rows (the wayline run's, the
        thread's queue), so later reads need not derive it again. Lost to a power cut or a
        crash, it is derived again, the same: so it waits for no commit (on SQLite it rides
        on the store's next transaction, ``_write_later``) and pays no fsync of its own.
        Only a pending or running row changes, so a status recorded durably meanwhile stays."""
        params = (status, time.time(), tenant_id, run_id)
        query = self.q.Q_SET_RUN_STATUS
        self.store._write_later(
            tenant_id, ("settle", tenant_id, run_id), lambda db: db.execute(query, params)
        )

    def reopen(self, tenant_id: str, run_id: str) -> bool:
        """Let a cancelled wayline run take new input (its committed steps stay)."""
        return self._write(self.q.Q_REOPEN, (time.time(), tenant_id, run_id), tenant_id) == 1

    def approvals_waiting(self) -> dict[str, int]:
        """Open approvals per tenant (a metric across tenants: counts only)."""
        return {str(t): int(n) for t, n in self.store._read(self.q.Q_APPROVALS_WAITING, ())}

    def leases(self, tenant_id: str) -> list[dict[str, Any]]:
        """Runs of this tenant held by a worker now: the workers page of the dashboard."""
        return self._rows(self.q.Q_WORKERS, (tenant_id,), tenant_id)


def server_tables(store: Store) -> ServerTables:
    """The server tables of a store (an encrypted store's, through to the SQL underneath:
    these tables hold no payload to seal)."""
    inner: Any = getattr(store, "inner", store)
    if not isinstance(inner, SQLStore):
        raise StoreError(
            f"wayline serve needs an SQL store (SQLite or PostgreSQL), not {type(store).__name__}"
        )
    return ServerTables(inner)
