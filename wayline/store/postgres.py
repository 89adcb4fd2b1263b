"""PostgreSQL backend (``pip install 'wayline[postgres]'``): many workers on many machines.

psycopg 3 with a connection pool. ``synchronous_commit`` is the database's own durability
layer under wayline's modes: ``on`` (the server default) makes a commit survive a crash of
the server; set ``?synchronous_commit=off`` on the URL to trade the last few hundred
milliseconds of commits on a server crash for latency (a worker kill still loses nothing).
A ``?schema=NAME`` URL option keeps wayline's tables in their own schema; ``?rls=1`` scopes
every transaction to its tenant for row-level security (``wayline db upgrade --rls``), and
``?rls=1&tenant=T`` pins a store to tenant T: the database itself then refuses it the rest.
``?prepare_threshold=none`` turns prepared statements off (for a pooler that cannot keep them).

wayline's sessions plan with ``enable_seqscan=off``: every statement it sends finds its rows
by an index (a run row by its key, a claim by the queue's indexes), and on a young table
the planner's cost model prefers a sequential scan of a few pages, which a statement then
prepared keeps as the table grows (issue 31: after ANALYZE of a ``runs`` table of 128 runs, a
fleet cell's fenced updates ran 7,000 sequential scans reading 900,000 rows).
PostgreSQL still scans a table in sequence where no index serves (``tests/store/test_pg_plans.py``
checks the plan of every lookup by key, on a table analyzed empty and analyzed small).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from wayline.errors import (
    LeaseLost,
    RunExistsError,
    StoreError,
    StoreFullError,
    StoreNotFoundError,
    StoreURLError,
)
from wayline.store import observe
from wayline.store.memory_sql import MEMORY_TABLES
from wayline.store.pg_listen import NoticeRelay
from wayline.store.records import CommitBatch
from wayline.store.sql_core import Executor, split_statements
from wayline.store.sql_fence import created_params, fence_params
from wayline.store.sql_store import SQLStore
from wayline.store.urls import redact_url

try:
    import psycopg
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise StoreURLError(
        "the PostgreSQL store needs psycopg: pip install 'wayline[postgres]'"
    ) from exc

from wayline.store.pg_statements import (
    COPY_DELTAS,
    COPY_METER,
    LG_METERED,
    Q_CREATE_ONE_TRIP,
    Q_PUT_DELTAS,
    Q_PUT_METER,
    Q_PUT_SEGMENTS,
    Q_STEP_ONE_TRIP,
    QUERIES,
    PgExecutor,
    columns,
    delta_row,
    group_one_trip,
    group_row,
    one_trip,
    send,
)

if TYPE_CHECKING:
    from wayline.store.encrypted import KeyProvider

__all__ = ["PostgresStore"]

log = logging.getLogger("wayline.store")

RLS_TABLES = (
    *QUERIES.RUN_TABLES,
    "blobs",
    "subject_keys",
    "threads",
    "thread_runs",
    "api_keys",
    *MEMORY_TABLES,
    "assistants",
    "assistant_versions",
    "metric_samples",
)
"""Every table with a tenant_id: the tables a run owns, the tenant's shared blobs and its
long-term memory, and the server's threads and API keys (a key is found before its tenant
by ``wayline_find_key``), the assistants made over the API, and the metrics workers
recorded (``metric_samples``)."""
Q_TABLES = """
SELECT table_name FROM information_schema.tables
WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name
"""
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_WAYLINE_OPTIONS = (
    "schema",
    "synchronous_commit",
    "pool_size",
    "prepare_threshold",
    "rls",
    "tenant",
    "announce",
)


def _write_error(exc: psycopg.Error) -> StoreError:
    if isinstance(exc, psycopg.errors.DiskFull):
        return StoreFullError(
            f"the PostgreSQL server's disk is full: {exc}. The write in flight was rolled "
            "back and every step committed before it is intact; free space on the "
            "server, then resume the run (a worker continues from its last committed step)"
        )
    return StoreError(f"PostgreSQL write failed and was rolled back: {exc}")


def _prepare_threshold(value: str | None) -> int | None:
    """Executions of a statement before psycopg prepares it on a connection: 0 by default,
    so a statement a run sends once (its final commit's) is planned once per connection,
    not each time (as LangGraph's ``PostgresSaver`` connects); ``none`` turns preparing off
    (a pooler in transaction mode that cannot hold prepared statements)."""
    if value is None:
        return 0
    if value.lower() == "none":
        return None
    if not value.isdigit():
        raise StoreURLError(f"prepare_threshold must be a count or 'none', got {value!r}")
    return int(value)


class PostgresStore(SQLStore):
    """The store on a PostgreSQL database, shared by any number of processes."""

    q = QUERIES
    placeholder = "%s"
    dialect = "postgres"
    q_meta_exists = """
    SELECT 1 FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_name = 'wayline_meta'
    """

    q_tables = Q_TABLES
    claim_lock = " FOR UPDATE SKIP LOCKED"

    def __init__(
        self,
        url: str,
        *,
        upgrade: bool = False,
        keys: KeyProvider | None = None,
        create: bool = True,
    ) -> None:
        self.url = url
        conninfo, options = _split_url(url)
        self.schema = options.get("schema", "public")
        self.rls = options.get("rls", "0").lower() in ("1", "on", "true")
        """Scope every transaction to its tenant (``?rls=1``) for row-level security."""
        self.pinned_tenant = options.get("tenant")
        """``?rls=1&tenant=T``: every transaction is T's, whatever tenant a call names."""
        self.announce = options.get("announce", "0").lower() in ("1", "on", "true")
        """``?announce=1``: every transaction that moves a run sends a NOTIFY naming it on
        ``runs_channel``, so a server's streams elsewhere wake at the commit instead of
        polling (``wayline.server.bell``). Off by default: the NOTIFY queue's lock at commit
        would serialize the commits of a fleet that nobody streams."""
        if not _SCHEMA_NAME.match(self.schema):
            raise StoreURLError(f"schema name {self.schema!r} must match {_SCHEMA_NAME.pattern}")
        settings = [f"-c search_path={self.schema}", "-c enable_seqscan=off"]
        if "synchronous_commit" in options:
            settings.append(f"-c synchronous_commit={options['synchronous_commit']}")
        size = int(options.get("pool_size", "4"))
        self._conninfo = conninfo
        self._channel = f"wayline_{self.schema}"
        self.runs_channel = f"wayline_{self.schema}_runs"
        """Where ``announce`` says which run moved: ``[tenant, run_id]`` in JSON."""
        self._relay = NoticeRelay(conninfo, self._channel, self._work)
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                found = "SELECT 1 FROM pg_namespace WHERE nspname = %s"
                missing = not conn.execute(found, (self.schema,)).fetchone()
                if missing and not create:
                    raise StoreNotFoundError(
                        f"there is no wayline store at {redact_url(url)}: the database has "
                        f"no schema {self.schema!r}; check the URL (a read never creates one)"
                    )
                if missing:  # an app role may not create
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            self._pool = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=size,
                kwargs={
                    "autocommit": True,
                    "options": " ".join(settings),
                    "prepare_threshold": _prepare_threshold(options.get("prepare_threshold")),
                },
                open=True,
                name="wayline",
            )
            self._pool.wait(timeout=30)
        except StoreNotFoundError:
            raise
        except Exception as exc:  # psycopg errors, OSError, the pool's timeout
            raise StoreURLError(f"cannot open PostgreSQL store {redact_url(url)}: {exc}") from exc
        try:
            self._open_schema(upgrade=upgrade, create=create)
            self._adopt_keys(keys)
        except BaseException:
            self._pool.close()  # a refused store holds no connections
            raise

    def _lock_schema(self, db: Any) -> None:
        # Several workers may start at once: one migrates, the others wait, then see it done.
        db.execute("SELECT pg_advisory_xact_lock(hashtext('wayline.schema'))")

    @contextmanager
    def _tx(self, tenant: str | None = None) -> Iterator[PgExecutor]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._scope(conn, tenant)
                yield PgExecutor(conn)
        except psycopg.Error as exc:
            raise _write_error(exc) from exc

    def _lg_pipeline(self, db: Any) -> AbstractContextManager[Any]:
        """A LangGraph step's statements (run row, checkpoint, versions, writes) in one
        round trip rather than one each (``lg_write_batch``)."""
        if isinstance(db, PgExecutor):
            return db.conn.pipeline()
        return nullcontext()

    def _lg_metered(self) -> dict[str, str]:
        return LG_METERED

    def _scope(self, conn: psycopg.Connection[Any], tenant: str | None) -> None:
        """Under row-level security, name the tenant this transaction may see."""
        tenant = self.pinned_tenant or tenant
        if self.rls and tenant is not None:
            conn.execute("SELECT set_config('wayline.tenant', %s, true)", (tenant,))

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        if self.rls or self.announce or not one_trip(batch):  # RLS scopes a transaction:
            return super().commit(tenant_id, run_id, token, batch)
        started = time.perf_counter()
        key = (tenant_id, run_id)
        sealed = self._sealed(tenant_id, run_id, batch)
        (d,) = sealed.deltas
        row = delta_row(key, token, d)
        if batch.create is None:
            _, fence = fence_params(self.q, key, token, sealed, time.time(), "")
            query, params = Q_STEP_ONE_TRIP, (*fence, *row)
        else:
            query, params = Q_CREATE_ONE_TRIP, (*created_params(key, batch, time.time()), *row)
        try:
            changed, _ = self._one_statement(query, params)
        except psycopg.Error as exc:
            raise _write_error(exc) from exc
        if changed == 1:
            observe.committed((tenant_id,), started)  # wayline.commit.duration
            observe.moved((key,))
            return
        if batch.create is not None:
            raise RunExistsError(run_id)
        raise LeaseLost(run_id, token)

    def commit_many(
        self, items: Sequence[tuple[str, str, int, CommitBatch]]
    ) -> list[BaseException | None]:
        """Plain steps of different runs (what a worker's slots commit together) as one
        statement (``group_one_trip``); anything else, or a group a bad row fails, by the
        general path (``wayline.store.sql_group``), which isolates the run at fault."""
        distinct = len({(t, r) for t, r, _, _ in items}) == len(items)
        plain = all(b.create is None and one_trip(b) for _, _, _, b in items)
        if self.rls or self.announce or not plain or not distinct or len(items) < 2:
            return super().commit_many(items)
        started = time.perf_counter()
        now = time.time()
        params = [
            value
            for t, r, token, batch in items
            for value in group_row((t, r), token, self._sealed(t, r, batch), now)
        ]
        try:
            _, rows = self._one_statement(group_one_trip(len(items)), params)
        except (psycopg.errors.IntegrityError, psycopg.errors.DataError) as exc:
            # The server refused a row, so the statement committed nothing: the general
            # path finds the run at fault. Any other failure (a lost connection: the
            # outcome is unknown) fails the group, as a failed transaction does.
            log.info("group commit of %d runs retried run by run: %s", len(items), exc)
            return super().commit_many(items)
        except psycopg.Error as exc:
            raise _write_error(exc) from exc
        done = {(t, r) for t, r in rows}
        observe.committed([t for t, r, _, _ in items if (t, r) in done], started)
        observe.moved([(t, r) for t, r, _, _ in items if (t, r) in done])
        return [None if (t, r) in done else LeaseLost(r, token) for t, r, token, _ in items]

    def _one_statement(self, query: str, params: Sequence[Any]) -> tuple[int, list[Any]]:
        """One statement as its own transaction (the pool's connections are autocommit):
        one round trip. Its row count and the rows it returned."""
        with self._pool.connection() as conn:
            cur = send(conn, query, params)
            return cur.rowcount, cur.fetchall() if cur.description is not None else []

    def _put_segments(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> set[str]:
        return {seg_id for (seg_id,) in db.execute(Q_PUT_SEGMENTS, columns(rows)).fetchall()}

    def _put_deltas(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        self._put_rows(db, rows, COPY_DELTAS, Q_PUT_DELTAS, super()._put_deltas)

    def _put_meter(self, db: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
        self._put_rows(db, rows, COPY_METER, Q_PUT_METER, super()._put_meter)

    def _put_rows(
        self,
        db: Executor,
        rows: Sequence[tuple[Any, ...]],
        copy: tuple[str, Sequence[str]],
        insert: str,
        one: Callable[[Executor, Sequence[tuple[Any, ...]]], None],
    ) -> None:
        """One row plainly (``one``); several as one ``copy``, or under row-level security
        as one ``insert`` over arrays."""
        if len(rows) == 1 or not isinstance(db, PgExecutor):
            one(db, rows)
        elif self.rls:
            db.execute(insert, columns(rows))
        else:
            db.copy(copy, rows)

    def _rescope(self, db: Executor, tenant: str) -> None:
        if isinstance(db, PgExecutor):
            self._scope(db.conn, tenant)

    def _read(self, query: str, params: Sequence[Any], tenant: str | None = None) -> list[Any]:
        try:
            with self._pool.connection() as conn:
                if not self.rls:  # one round trip: autocommit, no BEGIN/COMMIT around it
                    return conn.execute(query, params).fetchall()
                with conn.transaction():
                    self._scope(conn, tenant)
                    return conn.execute(query, params).fetchall()
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL read failed: {exc}") from exc

    def _notify(self, db: Executor, *, one: bool = False) -> None:
        db.execute("SELECT pg_notify(%s, '')", (self._channel,))  # delivered at commit

    def _announce(self, db: Executor, runs: Sequence[tuple[str, str]]) -> None:
        if self.announce:  # delivered at commit, and only if it commits
            for tenant_id, run_id in dict.fromkeys(runs):
                payload = json.dumps([tenant_id, run_id], separators=(",", ":"))
                db.execute("SELECT pg_notify(%s, %s)", (self.runs_channel, payload))

    def listen_runs(
        self, moved: Callable[[Sequence[tuple[str, str]]], None], stopping: threading.Event
    ) -> None:
        """Until ``stopping``: call ``moved`` with each run other processes' announcing
        stores moved (``?announce=1``), as its NOTIFY arrives. A lost
        connection is opened again (streams poll meanwhile: nothing is missed, only late)."""
        conn: psycopg.Connection[Any] | None = None
        while not stopping.is_set():
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self._conninfo, autocommit=True)
                    conn.execute(f'LISTEN "{self.runs_channel}"')
                for note in conn.notifies(timeout=0.25):  # back to check ``stopping``
                    try:
                        tenant_id, run_id = json.loads(note.payload)
                    except ValueError:
                        continue  # not an announcement of ours
                    moved(((str(tenant_id), str(run_id)),))
            except psycopg.Error as exc:
                log.warning("listening for run commits failed, retrying: %s", exc)
                if conn is not None:
                    conn.close()
                conn = None
                stopping.wait(1.0)
        if conn is not None:
            conn.close()

    def wait_for_work(self, timeout: float) -> None:
        """Until a start, resume or retry anywhere sends its notice on this schema's channel
        (one connection LISTENs for the whole store and wakes one idle slot a notice:
        ``wayline.store.pg_listen``), or ``timeout`` passes (the fallback: a lease that
        expires sends no notice)."""
        self._relay.start()
        self._work.wait(timeout)

    def _read_dicts(
        self, query: str, params: Sequence[Any], tenant: str | None = None
    ) -> list[dict[str, Any]]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._scope(conn, tenant)
                with conn.cursor(row_factory=dict_row) as cur:
                    return cur.execute(query, params).fetchall()
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL read failed: {exc}") from exc

    def enable_rls(self) -> list[str]:
        """Turn on row-level security: each run table then answers only for the tenant a
        transaction names. A role without BYPASSRLS, connecting with ``?rls=1``, can never
        see or write another tenant's rows. Returns the tables it covers."""
        sql = resources.files("wayline.store.sql").joinpath("postgres", "rls.sql").read_text()
        with self._tx() as db:
            self._lock_schema(db)
            for statement in split_statements(sql):
                db.execute(statement)
        return list(RLS_TABLES)

    def grant_scope(self, role: str, scope: str) -> list[str]:
        """Give an existing role a scope's privileges on this store's tables
        (``wayline.store.pg_roles``); returns the statements run."""
        from wayline.store.pg_roles import grants

        if not _SCHEMA_NAME.match(role):
            raise StoreURLError(f"role name {role!r} must match {_SCHEMA_NAME.pattern}")
        statements = grants(scope, role, self.schema)
        with self._tx() as db:
            for statement in statements:
                db.execute(statement)
        return statements

    def table_names(self) -> list[str]:
        return [name for (name,) in self._read(Q_TABLES, ())]

    def close(self) -> None:
        self._relay.close()
        self._pool.close()


def _split_url(url: str) -> tuple[str, dict[str, str]]:
    """Separate wayline's own URL options from what libpq understands."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    ours = {k: v for k, v in query if k in _WAYLINE_OPTIONS}
    rest = [(k, v) for k, v in query if k not in _WAYLINE_OPTIONS]
    scheme = "postgresql"
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), "")), ours
