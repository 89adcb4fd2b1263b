"""The PostgreSQL store's own statements and how they go to the server: the one-trip
commits (a step, a group of steps, a new run), the binary COPY and array inserts of many
rows, and the transaction's executor, which numbers a statement of more parameters than
psycopg's cache takes and sends it as written."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.numeric import Int8

from wayline.store.payloads import checksum
from wayline.store.records import SETTLED_STATUSES, CommitBatch, DeltaRecord
from wayline.store.sql_core import load_queries
from wayline.store.sql_fence import run_values

__all__ = [
    "COPY_DELTAS",
    "COPY_METER",
    "LG_METERED",
    "PSYCOPG_CACHED_PARAMS",
    "QUERIES",
    "Q_CREATE_ONE_TRIP",
    "Q_PUT_DELTAS",
    "Q_PUT_METER",
    "Q_PUT_SEGMENTS",
    "Q_STEP_ONE_TRIP",
    "PgExecutor",
    "columns",
    "delta_row",
    "group_one_trip",
    "group_row",
    "numbered",
    "one_trip",
    "send",
]

QUERIES = load_queries("%s")


@dataclasses.dataclass(frozen=True, slots=True)
class _Changed:
    rowcount: int


PSYCOPG_CACHED_PARAMS = 50
"""psycopg caches its conversion of a ``%s`` query only up to this many parameters and
parses a wider one again at every execution (its regular expressions: 150-250 us for the
group commit of 4-8 runs, 82 us for a claim over two graph versions). ``send`` numbers a
wider statement once (``numbered``) and sends it as written through a ``RawCursor``."""


@functools.lru_cache(maxsize=256)
def numbered(query: str) -> str | None:
    """``query`` with its ``%s`` placeholders numbered ``$1``, ``$2``... in order; None if
    it has a ``%b`` (a binary parameter, which a raw query cannot ask for) or a ``%%``."""
    if "%b" in query or "%%" in query:
        return None
    numbers = itertools.count(1)
    return re.sub("%s", lambda _: f"${next(numbers)}", query)


def send(conn: psycopg.Connection[Any], query: str, params: Sequence[Any]) -> psycopg.Cursor[Any]:
    """Execute ``query`` on ``conn``: as written, numbered, when it has more parameters
    than psycopg's cache takes (``PSYCOPG_CACHED_PARAMS``)."""
    if len(params) > PSYCOPG_CACHED_PARAMS and (raw := numbered(query)) is not None:
        return psycopg.RawCursor(conn).execute(raw, params)
    return conn.execute(query, params)


class PgExecutor:
    """A psycopg connection inside a transaction, with sqlite3's execute/executemany."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, query: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return send(self.conn, query, params)

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> _Changed:
        with self.conn.cursor() as cur:
            cur.executemany(query, rows)  # pipelined: one round trip for all the rows
            return _Changed(cur.rowcount)  # the rows all of them changed (read before close)

    def copy(self, statement: tuple[str, Sequence[str]], rows: Sequence[Sequence[Any]]) -> None:
        """``COPY ... FROM STDIN (FORMAT BINARY)`` of ``rows``, typed as ``statement`` says."""
        query, types = statement
        with self.conn.cursor() as cur, cur.copy(query) as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)


Q_PUT_SEGMENTS = """
INSERT INTO segments (tenant_id, run_id, seg_id, channel, level, first_step, last_step, payload,
    crc)
SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[], %b::bigint[],
    %b::bigint[], %b::bytea[], %b::bigint[])
ON CONFLICT DO NOTHING RETURNING seg_id
"""
"""Segments are written only if new (several snapshots may carry one): one statement over
binary arrays that says which it inserted, instead of a round trip a segment (an exit-mode
run of 300 steps commits 16 or more at once: 2.8 ms of round trips, 1.4 ms this way, on the
2-vCPU dev machine's embedded server)."""


COPY_DELTAS = (
    "COPY deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc) "
    "FROM STDIN (FORMAT BINARY)",
    ("text", "text", "int8", "bytea", "int8", "text", "int8"),
)
COPY_METER = (
    "COPY meter (tenant_id, run_id, step, tbl, channel, bytes) FROM STDIN (FORMAT BINARY)",
    ("text", "text", "int8", "text", "text", "int8"),
)
"""A commit's deltas (and meter rows), when it carries several, as one binary COPY: the
final commit of an exit-mode run of 300 steps (``bench/fleet.py``, one run) took 2.8 ms for
its deltas pipelined as an ``executemany``, 2.2 ms as an INSERT over binary arrays (which
psycopg builds in Python) and 1.6 ms this way; with one row the plain insert stays."""
Q_PUT_DELTAS = """
INSERT INTO deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc)
SELECT * FROM unnest(%b::text[], %b::text[], %b::bigint[], %b::bytea[], %b::bigint[],
    %b::text[], %b::bigint[])
"""
Q_PUT_METER = """
INSERT INTO meter (tenant_id, run_id, step, tbl, channel, bytes)
SELECT * FROM unnest(%b::text[], %b::text[], %b::bigint[], %b::text[], %b::text[],
    %b::bigint[])
"""
"""The same as one INSERT over binary arrays, under row-level security, which PostgreSQL
does not apply to ``COPY FROM`` (it refuses it)."""


LG_METERED = {
    insert: f"""
WITH stored AS ({insert.strip()} RETURNING 1)
INSERT INTO meter (tenant_id, run_id, step, tbl, channel, bytes)
SELECT %s, %s, %s, %s, %s, %s FROM stored
"""
    for insert in (QUERIES.Q_LG_PUT_VALUE, QUERIES.Q_LG_PUT_WRITE)
}
"""A LangGraph version or write and its meter row, the meter row only if the row was new:
a step's statements all go in one pipeline, with no round trip for the row counts before
the meter rows (``lg_write_batch``)."""


Q_STEP_ONE_TRIP = f"""
WITH fenced AS ({QUERIES.Q_FENCE_UPDATE.strip()} RETURNING 1)
INSERT INTO deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc)
SELECT %s, %s, %s, %s, %s, %s, %s FROM fenced
"""
"""A plain step commit (the run row and one delta) as one statement: the delta is inserted
only if the fenced update found the run's token, and outside a BEGIN/COMMIT the statement
is its own transaction, so the commit is one round trip instead of four (measured on the
2-vCPU dev machine with the embedded server: 4.5 ms a sync step before, see bench/fleet.py)."""


_SETTLED = "(" + ", ".join(f"'{status}'" for status in sorted(SETTLED_STATUSES)) + ")"
_GROUP_ROW = (
    "(%s::text, %s::bigint, %s::text, %s::text, %s::text, %s::double precision, %s::bigint,"
    " %s::text, %s::text, %s::bigint, %s::bytea, %s::bigint, %s::text, %s::bigint)"
)


@functools.lru_cache(maxsize=64)
def group_one_trip(n: int) -> str:
    """``n`` plain step commits (a run row and one delta each, of ``n`` different runs) as
    one statement, its own transaction: each run's row updated where its token still holds
    (what ``Q_FENCE_UPDATE`` sets, a primary-key lookup a run, whatever the size of
    ``runs``), and its delta inserted only if it was. The runs returned committed; the
    others lost their lease. One round trip for the group, where the general path
    (``wayline.store.sql_group``) takes five: BEGIN, the fences, the deltas' COPY (two) and
    COMMIT. One text per group size, each prepared once per connection.

    One UPDATE joined to the group's rows (``VALUES``, whose row count the planner knows),
    not an UPDATE a run: PostgreSQL sets up each UPDATE's executor (its expressions, its
    result relation) at every execution and plans each in the first ones, and the statement
    of one UPDATE a run cost the server 25-30% more CPU a step (``bench/README.md``).

    It goes out numbered (``send``: a group of 4 runs has 56 parameters), one row of
    scalars a run (``group_row``): psycopg dumps a scalar in C and an array in Python."""
    rows = ", ".join([_GROUP_ROW] * n)
    return f"""
WITH g (status, step, next_nodes, error, state_digest, updated_at, take,
    tenant_id, run_id, delta_step, payload, token, sizes, crc) AS (VALUES {rows}),
fenced AS (
    UPDATE runs r SET status = g.status, step = g.step, next_nodes = g.next_nodes,
        error = g.error, state_digest = COALESCE(g.state_digest, r.state_digest),
        updated_at = g.updated_at,
        inbox = CASE WHEN g.take = 1 THEN NULL ELSE r.inbox END,
        lease_owner = CASE WHEN g.status IN {_SETTLED} THEN NULL ELSE r.lease_owner END,
        lease_expires_at = CASE WHEN g.status IN {_SETTLED} THEN NULL
            ELSE r.lease_expires_at END
    FROM g WHERE r.tenant_id = g.tenant_id AND r.run_id = g.run_id AND r.fencing_token = g.token
    RETURNING r.tenant_id, r.run_id
)
INSERT INTO deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc)
SELECT g.tenant_id, g.run_id, g.delta_step, g.payload, g.token, g.sizes, g.crc
FROM g JOIN fenced f ON f.tenant_id = g.tenant_id AND f.run_id = g.run_id
RETURNING tenant_id, run_id
"""


def group_row(key: tuple[str, str], token: int, batch: CommitBatch, now: float) -> tuple[Any, ...]:
    """One run's row of ``group_one_trip``: what its fenced update sets (``run_values``),
    then its one delta's row (``delta_row``)."""
    (d,) = batch.deltas
    return (*run_values(batch, now), *delta_row(key, token, d))


def delta_row(key: tuple[str, str], token: int, d: DeltaRecord) -> tuple[Any, ...]:
    """A delta's row as the one-statement commits send it: tenant, run, step, payload,
    token, sizes and CRC. The CRC always goes as an ``Int8``: psycopg sends a small int as
    int4 and a large one as int8, and a statement is prepared once per set of parameter
    types (a CRC is either, at random)."""
    check = checksum(("deltas", *key, d.step), d.payload)
    return (*key, d.step, d.payload, token, d.sizes(), Int8(check))


Q_CREATE_ONE_TRIP = """
WITH created AS (
    INSERT INTO runs (tenant_id, run_id, graph_name, graph_version, status, step, next_nodes,
        durability, fencing_token, lease_owner, lease_expires_at, error, state_digest,
        created_at, updated_at, schema_version, incarnation, queued_at, subject, classes,
        fingerprint, shape)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 1, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
        %s)
    ON CONFLICT (tenant_id, run_id) DO NOTHING RETURNING 1
)
INSERT INTO deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc)
SELECT %s, %s, %s, %s, %s, %s, %s FROM created
"""
"""A new run's row, as its input step leaves it, and that step's delta as one statement
(``Q_STEP_ONE_TRIP`` for a run's first commit): no delta when the run exists already."""


def columns(rows: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows as one array a column, for an ``unnest`` statement."""
    return [list(column) for column in zip(*rows, strict=True)]


def one_trip(batch: CommitBatch) -> bool:
    return (
        batch.run is not None
        and len(batch.deltas) == 1
        and batch.clear_pending_through is None
        and not (batch.snapshots or batch.segments or batch.blobs or batch.pending)
        and not (batch.interrupts or batch.audit or batch.versions or batch.effects)
        and not batch.memory  # long-term memory rows: the general path
    )
