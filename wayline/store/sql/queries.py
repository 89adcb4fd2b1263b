"""Every query wayline runs, by name, in the dialect SQLite (3.35+) and PostgreSQL share.

Placeholders are ``?``; the PostgreSQL backend rewrites them to ``%s`` once, at import.
Schemas live beside this module (``sqlite_schema.sql``, ``postgres_schema.sql``); only
table listing differs enough to live in the backends.
"""

from __future__ import annotations

Q_SCHEMA_VERSION = "SELECT value FROM wayline_meta WHERE key = 'schema_version'"
Q_SET_SCHEMA_VERSION = """
INSERT INTO wayline_meta (key, value) VALUES ('schema_version', ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value
"""
Q_META = "SELECT value FROM wayline_meta WHERE key = ?"
Q_SET_META = """
INSERT INTO wayline_meta (key, value) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value
"""
"""The store's own facts: its schema version, and whether it is encrypted."""

_RUN_COLUMNS = (
    "tenant_id, run_id, graph_name, graph_version, status, step, next_nodes, durability, "
    "fencing_token, lease_owner, lease_expires_at, error, state_digest, created_at, updated_at, "
    "attempts, wake_at, cancel_requested, inbox, schema_version, inbox_crc, incarnation, subject, "
    "classes, redacted, fingerprint, shape, engine"
)
RUN_COLUMN_NAMES = tuple(c.strip() for c in _RUN_COLUMNS.split(","))
"""Rows of ``runs`` are read by these names, never by position."""

_INSERT_COLUMNS = ", ".join(RUN_COLUMN_NAMES[:22])
Q_INSERT_RUN = f"""
INSERT INTO runs ({_INSERT_COLUMNS}, queued_at, fingerprint, shape)
VALUES (?, ?, ?, ?, 'pending', -1, '[]', ?, ?, ?, ?, NULL, NULL, ?, ?, 0, NULL, 0, ?, ?,
    ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, run_id) DO NOTHING
"""
Q_CREATE_RUN = f"{Q_INSERT_RUN.rstrip()}\nRETURNING {_RUN_COLUMNS}\n"
"""``Q_INSERT_RUN`` returning the new row (nothing when the run exists): a run's start or
enqueue reads no row back after creating it."""
Q_CREATE_RUN_LABELLED = f"""
INSERT INTO runs ({_INSERT_COLUMNS}, queued_at, fingerprint, shape, subject, classes)
VALUES (?, ?, ?, ?, 'pending', -1, '[]', ?, ?, ?, ?, NULL, NULL, ?, ?, 0, NULL, 0, ?, ?,
    ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, run_id) DO NOTHING
RETURNING {_RUN_COLUMNS}
"""
"""``Q_CREATE_RUN`` for a run that names a data subject or labels channels (docs/data.md):
the same one statement, two more columns."""
Q_SET_ENGINE = """
UPDATE runs SET engine = ? WHERE tenant_id = ? AND run_id = ? AND engine <> ?
"""
"""A run queued for LangGraph's engine (``wayline.langgraph.engine``) says so."""
Q_SET_INBOX = """
UPDATE runs SET inbox = ?, inbox_crc = ?, wake_at = NULL, updated_at = ?,
    queued_at = CASE WHEN status = 'running' THEN queued_at ELSE ? END,
    status = CASE WHEN status = 'running' THEN status ELSE 'pending' END
WHERE tenant_id = ? AND run_id = ? AND status <> 'cancelled'
"""
_CLAIM_FILTER = """cancel_requested = 0 AND (wake_at IS NULL OR wake_at <= ?)
    AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)"""
Q_CLAIM_BRANCHES = [
    f"""SELECT tenant_id, run_id, 0 AS tier, updated_at AS k, 1 AS taken FROM runs
WHERE graph_name = ? AND graph_version = ? AND fingerprint = ? AND status = 'running'
    AND lease_expires_at < ?
    AND {_CLAIM_FILTER}
ORDER BY updated_at LIMIT {{peek}}{{lock}}""",
    f"""SELECT tenant_id, run_id, 1 AS tier, updated_at AS k, 0 AS taken FROM runs
WHERE graph_name = ? AND graph_version = ? AND fingerprint = ? AND status = 'running'
    AND lease_expires_at IS NULL
    AND {_CLAIM_FILTER}
ORDER BY updated_at LIMIT {{peek}}{{lock}}""",
    f"""SELECT tenant_id, run_id, CASE WHEN lease_expires_at IS NULL THEN 1 ELSE 0 END AS tier,
    queued_at AS k, CASE WHEN lease_expires_at IS NULL THEN 0 ELSE 1 END AS taken FROM runs
WHERE graph_name = ? AND graph_version = ? AND fingerprint = ? AND status = 'pending'
    AND queued_at <= ?
    AND (lease_expires_at IS NULL OR lease_expires_at < ?) AND {_CLAIM_FILTER}
ORDER BY queued_at LIMIT {{peek}}{{lock}}""",
    f"""SELECT tenant_id, run_id, 0 AS tier, wake_at AS k, 0 AS taken FROM runs
WHERE graph_name = ? AND graph_version = ? AND fingerprint = ? AND status = 'interrupted'
    AND wake_at <= ?
    AND {_CLAIM_FILTER}
ORDER BY wake_at LIMIT {{peek}}{{lock}}""",
]
"""The claimable runs of one graph version, each kind found by an index in the order it is
claimed: leases that expired (``runs_claimable``: the expired range, few rows), runs
released while running (a graceful stop), and the queue (``runs_queued``, a partial index of
pending runs in the order they were queued: ``queued_at``, which a step commit does not move,
so on PostgreSQL a step's update of its run row changes no indexed column and is a HOT update;
keyed by ``updated_at``, every step wrote an entry into each index of ``runs``, which cost a
single run 20% of its sync step rate on the dev machine's embedded server). Parameters: name,
version, fingerprint, the time once per other ``?``, tenant, tenant. A run of the same name
and version but another fingerprint (another module's ``State@1``) is in none of them: it
waits for a worker that has its graph. Waiting runs (interrupted, parked)
and finished ones are in none of these ranges, so a claim reads a few index entries however
many runs are queued or waiting. A run that waits for a time (a durable timer, a scheduled
retry) is queued at its wake time (``queued_at = wake_at``), so ``queued_at <= now`` bounds
the queue's range and ten thousand sleeping runs are not read by every claim; an
interrupted run whose approval expires into a declared path is found by ``runs_waking``
once its ``wake_at`` is due
(measured with 100,000 queued and 10,000 waiting: 37 ms a claim on SQLite with one scan
over all runs, 0.19 ms this way; bench/fleet.py)."""
Q_CLAIM_CANDIDATE = """
SELECT tenant_id, run_id, taken FROM ({branches}) AS c ORDER BY tier, k LIMIT {peek}
"""
"""A run whose lease expired (its worker died) goes first: it has waited a lease already,
and its ``updated_at`` is its last commit, later than every run queued before that. Ordered
by ``updated_at`` alone, a takeover waited behind the whole backlog (issue 9: a dead
worker's runs claimed after runs queued seconds later). Then the oldest queued work.
``{branches}`` is a UNION ALL of ``Q_CLAIM_BRANCHES`` for each graph version served.
``taken``: the run's lease was held and had expired, so this claim takes it over from a
holder that died or stalled (``RunRecord.taken_over``: a recovery read follows)."""
Q_NEXT_EXPIRY = """
SELECT MIN(lease_expires_at) FROM runs
WHERE ({graphs}) AND status IN ('pending', 'running') AND cancel_requested = 0
    AND lease_expires_at >= ? AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)
"""
Q_CLAIM_TAKE = f"""
UPDATE runs SET fencing_token = fencing_token + 1, lease_owner = ?, lease_expires_at = ?,
    status = 'running', updated_at = ?, wake_at = NULL
WHERE tenant_id = ? AND run_id = ? RETURNING {_RUN_COLUMNS}
"""
"""Returns the claimed row whole: a claim is one transaction and no read after it. The claim
spends the wake time: the run's interrupt rows keep each timer's and expiry's time, so a
holder that dies is taken over when its lease expires, and the next suspension sets it
again."""
Q_HEARTBEAT = """
UPDATE runs SET lease_expires_at = ?
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ? AND lease_owner = ?
RETURNING cancel_requested
"""
Q_REQUEST_CANCEL = """
UPDATE runs SET cancel_requested = 1, updated_at = ?,
    status = CASE WHEN lease_expires_at IS NULL OR lease_expires_at < ? THEN 'cancelled'
             ELSE status END
WHERE tenant_id = ? AND run_id = ? AND status NOT IN ('done', 'cancelled')
"""
Q_NEXT_WAKE = """
SELECT MIN(queued_at) FROM runs
WHERE ({graphs}) AND status = 'pending' AND cancel_requested = 0 AND queued_at > ?
    AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)
UNION ALL
SELECT MIN(wake_at) FROM runs
WHERE ({graphs}) AND status = 'interrupted' AND wake_at IS NOT NULL AND cancel_requested = 0
    AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)
"""
"""When the next sleeping or expiring run of these graphs falls due: the first one queued in
the future (a timer, a retry), the first interrupted one with a wake time."""
Q_SET_WAKE = """
UPDATE runs SET wake_at = ?,
    queued_at = CASE WHEN status = 'pending' THEN COALESCE(CAST(? AS DOUBLE PRECISION), queued_at)
        ELSE queued_at END
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
"""A suspension's wake time (None: none), in the transaction of its commit. A sleeping run
is pending and queued at its wake time, so the queue's order and range find it when due."""
Q_SCHEDULE_RETRY = """
UPDATE runs SET status = 'pending', attempts = attempts + 1, wake_at = ?, queued_at = ?,
    error = ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_SET_VERSIONS = """
UPDATE runs SET graph_version = ?, schema_version = ?, fingerprint = ?, shape = ?
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_NOTE_ERROR = """
UPDATE runs SET error = ?, status = COALESCE(?, status), updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
"""Never assigns ``step``: a run that could not be read keeps its committed step."""
Q_REQUEUE = """
UPDATE runs SET status = 'pending', attempts = 0, wake_at = NULL, updated_at = ?, queued_at = ?
WHERE tenant_id = ? AND run_id = ? AND (status IN ('failed', 'parked')) IS TRUE
"""
Q_GET_RUN = f"SELECT {_RUN_COLUMNS} FROM runs WHERE tenant_id = ? AND run_id = ?"
Q_RUN_PROGRESS = """
SELECT status, step, error, fencing_token, inbox IS NOT NULL FROM runs
WHERE tenant_id = ? AND run_id = ?
"""
Q_LIST_RUNS = f"""
SELECT {_RUN_COLUMNS} FROM runs
WHERE tenant_id = ? AND (CAST(? AS TEXT) IS NULL OR status = ?)
ORDER BY updated_at DESC LIMIT ? OFFSET ?
"""
Q_RUN_IDS_WITH_PREFIX = """
SELECT run_id FROM runs
WHERE tenant_id = ? AND substr(run_id, 1, CAST(? AS INTEGER)) = ? ORDER BY run_id LIMIT ?
"""
Q_RUN_IDS_IN_RANGE = """
SELECT run_id FROM runs WHERE tenant_id = ? AND run_id >= ? AND run_id < ?
AND substr(run_id, 1, CAST(? AS INTEGER)) = ? ORDER BY run_id LIMIT ?
"""
Q_LEASE_OF = """
SELECT fencing_token, lease_owner, lease_expires_at FROM runs WHERE tenant_id = ? AND run_id = ?
"""
Q_TAKE_LEASE = """
UPDATE runs SET fencing_token = fencing_token + 1, lease_owner = ?, lease_expires_at = ?
WHERE tenant_id = ? AND run_id = ? RETURNING fencing_token
"""
Q_RELEASE = """
UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_FENCE_TOUCH = """
UPDATE runs SET updated_at = ?, inbox = CASE WHEN ? = 1 THEN NULL ELSE inbox END
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
Q_FENCE_STEP = """
UPDATE runs SET step = ?, next_nodes = ?, error = ?,
    state_digest = COALESCE(?, state_digest), updated_at = ?,
    inbox = CASE WHEN ? = 1 THEN NULL ELSE inbox END
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ? AND (status = ?) IS TRUE
"""
"""The common step commit: the status is unchanged, so it is not assigned, and SQLite does
not rewrite the two indexes on status (measured: 3 WAL pages for the run row with it, 1
without). The status test is wrapped (``(...) IS TRUE``: the same rows, the column is NOT
NULL) so that no index on status can serve it: on a young table PostgreSQL's estimates made
``runs_claimable``, skipped through by its graph names, look cheaper than the primary key
(issue 31; ``tests/store/test_pg_plans.py``). Every lookup of a run by its key that tests
the status does the same."""
_SETTLED = "('done', 'failed', 'cancelled', 'interrupted', 'parked')"
Q_FENCE_UPDATE = f"""
UPDATE runs SET status = ?, step = ?, next_nodes = ?, error = ?,
    state_digest = COALESCE(?, state_digest), updated_at = ?,
    inbox = CASE WHEN ? = 1 THEN NULL ELSE inbox END,
    lease_owner = CASE WHEN ? IN {_SETTLED} THEN NULL ELSE lease_owner END,
    lease_expires_at = CASE WHEN ? IN {_SETTLED} THEN NULL ELSE lease_expires_at END
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
"""A status change. A settled run (nobody may claim it) gives its lease up in the same
transaction, so finishing a run costs no separate release commit (one fsync fewer a run).
PostgreSQL's group commit sets the same columns for many runs in one UPDATE
(``pg_statements.group_one_trip``): a change here goes there too."""
Q_INSERT_DELTA = """
INSERT INTO deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""
Q_INSERT_DELTA_TIMED = """
INSERT INTO deltas (tenant_id, run_id, step, payload, fencing_token, sizes, crc, committed_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
"""SQLite's: a column added by ALTER TABLE takes no computed default, so the time is given."""
Q_STEP_TIMES = """
SELECT step, committed_at FROM deltas
WHERE tenant_id = ? AND run_id = ? AND step > ? AND step <= ? AND committed_at IS NOT NULL
"""
Q_LOAD_DELTA_SIZES = """
SELECT step, sizes FROM deltas WHERE tenant_id = ? AND run_id = ? AND sizes IS NOT NULL
"""
Q_PUT_SNAPSHOT = """
INSERT INTO snapshots (tenant_id, run_id, step, payload, sizes, crc) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, run_id, step) DO UPDATE SET payload = excluded.payload,
    crc = excluded.crc,
    sizes = CASE WHEN snapshots.sizes IS NULL THEN excluded.sizes
        ELSE substr(snapshots.sizes, 1, length(snapshots.sizes) - 1) || ','
            || substr(excluded.sizes, 2) END
"""
"""A snapshot replaced (a migration's, at the run's step) keeps the meter rows of every
write: the new JSON array's items are appended to the stored one's."""
Q_LOAD_SNAPSHOT_SIZES = """
SELECT step, sizes FROM snapshots WHERE tenant_id = ? AND run_id = ? AND sizes IS NOT NULL
"""
Q_CLEAR_PENDING = "DELETE FROM pending_writes WHERE tenant_id = ? AND run_id = ? AND step <= ?"
Q_PUT_PENDING = """
INSERT INTO pending_writes (tenant_id, run_id, step, task_id, payload, crc)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, run_id, step, task_id)
DO UPDATE SET payload = excluded.payload, crc = excluded.crc
"""
Q_PUT_INTERRUPT = """
INSERT INTO interrupts (tenant_id, run_id, step, task_id, idx, interrupt_id, value, resume,
    digest, approvers, expires_at, crc, resume_crc, cls, on_expire)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, run_id, step, task_id, idx)
DO UPDATE SET interrupt_id = excluded.interrupt_id, value = excluded.value,
    resume = excluded.resume, digest = excluded.digest, approvers = excluded.approvers,
    expires_at = excluded.expires_at, crc = excluded.crc, resume_crc = excluded.resume_crc,
    cls = excluded.cls, on_expire = excluded.on_expire
"""
Q_ANSWER_INTERRUPT = """
UPDATE interrupts SET resume = ?, resume_crc = ?
WHERE tenant_id = ? AND run_id = ? AND interrupt_id = ? AND resume IS NULL
"""
Q_APPEND_AUDIT = """
INSERT INTO audit (tenant_id, run_id, at, actor, action, digest, outcome, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
Q_LOAD_AUDIT = """
SELECT tenant_id, run_id, actor, action, outcome, digest, detail, at FROM audit
WHERE tenant_id = ? AND run_id = ? ORDER BY id
"""
Q_PUT_SEGMENT = """
INSERT INTO segments (tenant_id, run_id, seg_id, channel, level, first_step, last_step, payload,
    crc)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
"""
Q_PUT_BLOB = (
    "INSERT INTO blobs (tenant_id, digest, payload, crc) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
Q_PUT_BLOB_REF = """
INSERT INTO blob_refs (tenant_id, run_id, digest) VALUES (?, ?, ?) ON CONFLICT DO NOTHING
"""
Q_PUT_METER = """
INSERT INTO meter (tenant_id, run_id, step, tbl, channel, bytes) VALUES (?, ?, ?, ?, ?, ?)
"""
Q_LOAD_SEGMENTS = """
SELECT seg_id, payload, crc FROM segments WHERE tenant_id = ? AND run_id = ? AND seg_id IN ({marks})
"""
"""A snapshot's segments in one round trip (``{marks}``: one placeholder per segment id)."""
Q_LOAD_BLOB = "SELECT payload, crc FROM blobs WHERE tenant_id = ? AND digest = ?"
Q_LOAD_METER = """
SELECT step, tbl, channel, bytes FROM meter WHERE tenant_id = ? AND run_id = ?
ORDER BY step, id
"""
Q_HELD_BYTES = """
SELECT 'deltas', COALESCE(SUM(LENGTH(payload)), 0) FROM deltas WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'snapshots', COALESCE(SUM(LENGTH(payload)), 0) FROM snapshots
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'segments', COALESCE(SUM(LENGTH(payload)), 0) FROM segments
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'pending_writes', COALESCE(SUM(LENGTH(payload)), 0) FROM pending_writes
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'interrupts', COALESCE(SUM(LENGTH(value) + COALESCE(LENGTH(resume), 0)), 0)
    FROM interrupts WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'blobs', COALESCE(SUM(LENGTH(b.payload)), 0) FROM blobs b
    JOIN blob_refs r ON r.tenant_id = b.tenant_id AND r.digest = b.digest
    WHERE r.tenant_id = ? AND r.run_id = ?
UNION ALL SELECT 'effects', COALESCE(SUM(COALESCE(LENGTH(result), 0)), 0) FROM effects
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'runs', COALESCE(SUM(COALESCE(LENGTH(inbox), 0)), 0) FROM runs
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'lg_checkpoints', COALESCE(SUM(LENGTH(payload)), 0) FROM lg_checkpoints
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'lg_values', COALESCE(SUM(LENGTH(payload)), 0) FROM lg_values
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'lg_writes', COALESCE(SUM(LENGTH(payload)), 0) FROM lg_writes
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'stream_events', COALESCE(SUM(LENGTH(payload)), 0) FROM stream_events
    WHERE tenant_id = ? AND run_id = ?
UNION ALL SELECT 'run_queue', COALESCE(SUM(COALESCE(LENGTH(inbox), 0)), 0) FROM run_queue
    WHERE tenant_id = ? AND run_id = ?
"""
HELD_BYTES_PARAMS = 13
"""Q_HELD_BYTES takes (tenant_id, run_id) this many times."""
Q_PURGE = [
    "DELETE FROM deltas WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM snapshots WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM segments WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM pending_writes WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM interrupts WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM effects WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM meter WHERE tenant_id = ? AND run_id = ?",
    # purge receipts (who erased the run, when, how many rows; no payload) outlive it
    "DELETE FROM audit WHERE tenant_id = ? AND run_id = ? AND action <> 'purge'",
    "DELETE FROM blob_refs WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM lg_checkpoints WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM lg_values WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM lg_writes WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM stream_events WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM run_queue WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM runs WHERE tenant_id = ? AND run_id = ?",
]
Q_PURGE_ORPHAN_BLOBS = """
DELETE FROM blobs WHERE tenant_id = ? AND digest IN ({marks}) AND NOT EXISTS (
    SELECT 1 FROM blob_refs r WHERE r.tenant_id = blobs.tenant_id AND r.digest = blobs.digest)
"""
Q_BLOBS_OF_RUN = "SELECT digest FROM blob_refs WHERE tenant_id = ? AND run_id = ?"
Q_LOAD_SNAPSHOT = """
SELECT step, payload, crc FROM snapshots WHERE tenant_id = ? AND run_id = ? AND step <= ?
ORDER BY step DESC LIMIT 1
"""
Q_LOAD_DELTAS = """
SELECT step, payload, fencing_token, crc FROM deltas
WHERE tenant_id = ? AND run_id = ? AND step > ? AND step <= ? ORDER BY step
"""
Q_LOAD_PENDING = """
SELECT step, task_id, payload, crc FROM pending_writes
WHERE tenant_id = ? AND run_id = ? AND step = ? ORDER BY task_id
"""
Q_LOAD_INTERRUPTS = """
SELECT step, task_id, idx, interrupt_id, value, resume, digest, approvers, expires_at, crc,
    resume_crc, cls, on_expire
FROM interrupts
WHERE tenant_id = ? AND run_id = ? AND step = ? ORDER BY task_id, idx
"""

_EFFECT_COLUMNS = (
    "tenant_id, effect_key, run_id, kind, node, step, name, seq, attempt, request_digest, "
    "status, fencing_token, result, error, created_at, updated_at, result_crc, cls"
)
EFFECT_COLUMN_NAMES = tuple(c.strip() for c in _EFFECT_COLUMNS.split(","))
Q_GET_EFFECT = f"SELECT {_EFFECT_COLUMNS} FROM effects WHERE tenant_id = ? AND effect_key = ?"
Q_LIST_EFFECTS = f"""
SELECT {_EFFECT_COLUMNS} FROM effects WHERE tenant_id = ? AND run_id = ? ORDER BY step, created_at
"""
Q_INSERT_EFFECT = f"""
INSERT INTO effects ({_EFFECT_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING
"""
Q_UPDATE_EFFECT = """
UPDATE effects SET attempt = ?, status = ?, fencing_token = ?, result = ?, error = ?,
    updated_at = ?, result_crc = ?
WHERE tenant_id = ? AND effect_key = ? AND status = ?
"""

RUN_TABLES = (
    "runs",
    "deltas",
    "snapshots",
    "segments",
    "pending_writes",
    "interrupts",
    "effects",
    "audit",
    "meter",
    "blob_refs",
    "lg_checkpoints",
    "lg_values",
    "lg_writes",
    "stream_events",
    "run_queue",
)
"""Tables keyed by (tenant_id, run_id): everything a run owns, bar shared blobs."""
Q_DUMP = "SELECT * FROM {table} WHERE tenant_id = ? AND run_id = ?"
Q_COUNT_ROWS = "SELECT COUNT(*) FROM {table} WHERE tenant_id = ? AND run_id = ?"
Q_DUMP_BLOBS = """
SELECT b.digest, b.payload, b.crc FROM blobs b JOIN blob_refs r
    ON r.tenant_id = b.tenant_id AND r.digest = b.digest
WHERE r.tenant_id = ? AND r.run_id = ?
"""
Q_RUNS_BEFORE = """
SELECT run_id FROM runs WHERE tenant_id = ? AND updated_at < ? AND status IN ({statuses})
ORDER BY updated_at
"""

# -- data classes (wayline.control.erasure) ---------------------------------------------
Q_RUNS_OF_SUBJECT = """
SELECT run_id FROM runs WHERE tenant_id = ? AND subject = ? ORDER BY created_at, run_id
"""
Q_ALL_RUN_IDS = "SELECT run_id FROM runs WHERE tenant_id = ? ORDER BY created_at, run_id"
Q_TENANTS = "SELECT tenant_id FROM runs UNION SELECT tenant_id FROM memory_items ORDER BY tenant_id"
"""Every tenant holding a run or a memory (retention and the store report visit each)."""
Q_SET_REDACTED = "UPDATE runs SET redacted = ? WHERE tenant_id = ? AND run_id = ?"
Q_REDACTED_OF = "SELECT redacted FROM runs WHERE tenant_id = ? AND run_id = ?"
Q_REWRITE = {
    "runs": "UPDATE runs SET inbox = ?, inbox_crc = ? WHERE tenant_id = ? AND run_id = ?",
    "deltas": (
        "UPDATE deltas SET payload = ?, crc = ? WHERE tenant_id = ? AND run_id = ? AND step = ?"
    ),
    "snapshots": (
        "UPDATE snapshots SET payload = ?, crc = ? WHERE tenant_id = ? AND run_id = ? AND step = ?"
    ),
    "pending_writes": (
        "UPDATE pending_writes SET payload = ?, crc = ? "
        "WHERE tenant_id = ? AND run_id = ? AND step = ? AND task_id = ?"
    ),
}
"""Rewrite one payload row in place: new (sealed) bytes and checksum, by the row's key."""
Q_DELETE_SEGMENT = "DELETE FROM segments WHERE tenant_id = ? AND run_id = ? AND seg_id = ?"
Q_DROP_BLOB_REF = "DELETE FROM blob_refs WHERE tenant_id = ? AND run_id = ? AND digest = ?"
Q_DROP_BLOB_IF_ORPHAN = """
DELETE FROM blobs WHERE tenant_id = ? AND digest = ?
    AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.tenant_id = ? AND r.digest = ?)
"""

Q_NEXT_STREAM_SEQ = """
SELECT COALESCE(MAX(seq), 0) FROM stream_events WHERE tenant_id = ? AND run_id = ?
"""
Q_PUT_STREAM_EVENT = """
INSERT INTO stream_events (tenant_id, run_id, seq, step, node, mode, payload, crc, created_at)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM runs WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?)
"""
"""Fenced: a worker that lost the run's lease appends nothing."""
Q_LOAD_STREAM_EVENTS = """
SELECT seq, step, node, mode, payload, crc FROM stream_events
WHERE tenant_id = ? AND run_id = ? AND seq > ? AND step > ? AND step <= ? ORDER BY seq
"""
Q_LAST_STREAM_MARK = """
SELECT seq, step, node, mode, payload, crc FROM stream_events
WHERE tenant_id = ? AND run_id = ? AND mode = ? ORDER BY seq DESC LIMIT 1
"""
"""The last attempt mark of a run (a worker taking it over records what the first asked)."""

# -- a busy run's queued input (wayline.store.sql_queue) --------------------------------
Q_LOCK_RUN = "UPDATE runs SET updated_at = updated_at WHERE tenant_id = ? AND run_id = ?"
"""Holds the run's row for the transaction (PostgreSQL: a row lock): two inputs queued at
once on one run take their places one after the other."""
Q_QUEUE_INPUT = """
INSERT INTO run_queue (tenant_id, run_id, seq, label, inbox, inbox_crc, created_at)
SELECT ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM run_queue
WHERE tenant_id = ? AND run_id = ?
RETURNING seq
"""
Q_QUEUED_INPUTS = """
SELECT label, seq, created_at, promoted_at, from_step, prior_status FROM run_queue
WHERE tenant_id = ? AND run_id = ? ORDER BY seq
"""
Q_DROP_QUEUED = """
DELETE FROM run_queue WHERE tenant_id = ? AND run_id = ? AND label = ? AND promoted_at IS NULL
"""
_STOPPED = "('done', 'interrupted', 'failed', 'cancelled')"
Q_QUEUE_HEADS = f"""
SELECT q.tenant_id, q.run_id, q.seq, q.inbox, q.inbox_crc, r.step, r.status FROM run_queue q
JOIN runs r ON r.tenant_id = q.tenant_id AND r.run_id = q.run_id
WHERE q.promoted_at IS NULL AND r.inbox IS NULL AND r.status IN {_STOPPED}
    AND (r.lease_expires_at IS NULL OR r.lease_expires_at < ?)
    AND (CAST(? AS TEXT) IS NULL OR q.tenant_id = ?)
    AND NOT EXISTS (SELECT 1 FROM run_queue e WHERE e.tenant_id = q.tenant_id
        AND e.run_id = q.run_id AND e.promoted_at IS NULL AND e.seq < q.seq)
ORDER BY q.created_at LIMIT 16
"""
"""The oldest queued input of each run that has stopped (done, waiting on an answer,
failed or cancelled: not parked, which waits for an operator) and that no live lease
holds: what the claim query moves into its run's inbox first."""
Q_PROMOTE_RUN = """
UPDATE runs SET inbox = ?, inbox_crc = ?, status = 'pending', cancel_requested = 0,
    wake_at = NULL, queued_at = ?, updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND inbox IS NULL AND (status = ?) IS TRUE AND step = ?
    AND (lease_expires_at IS NULL OR lease_expires_at < ?) IS TRUE
"""
"""Conditional on the status and step the heads read (both stopped then); the conditions
beside the key are wrapped (``IS TRUE``) so that PostgreSQL finds the row by its key, not by
``runs_claimable`` (tests/store/test_pg_plans.py)."""
Q_PROMOTE_ENTRY = """
UPDATE run_queue SET inbox = NULL, inbox_crc = NULL, promoted_at = ?, from_step = ?,
    prior_status = ?
WHERE tenant_id = ? AND run_id = ? AND seq = ? AND promoted_at IS NULL
"""

# -- rolling a stopped run back to a step (wayline.store.sql_rollback) -----------------
Q_ROLLBACK_TRIM = [
    "DELETE FROM deltas WHERE tenant_id = ? AND run_id = ? AND step > ?",
    "DELETE FROM snapshots WHERE tenant_id = ? AND run_id = ? AND step > ?",
    "DELETE FROM segments WHERE tenant_id = ? AND run_id = ? AND last_step > ?",
    # a step's questions and its finished peers' writes are kept under the step that asks
    # (after_step + 1 asked before the rolled-back input arrived: they stay)
    "DELETE FROM pending_writes WHERE tenant_id = ? AND run_id = ? AND step > ? + 1",
    "DELETE FROM interrupts WHERE tenant_id = ? AND run_id = ? AND step > ? + 1",
    # the questions open at after_step were answered after it: by the removed run (a
    # resume), so they are open again, as they were before it
    "UPDATE interrupts SET resume = NULL, resume_crc = NULL "
    "WHERE tenant_id = ? AND run_id = ? AND step = ? + 1",
    # from after_step + 1 on: the removed run's claim marks its attempt there, and a stream
    # of the next run from after_step would count that attempt as its own
    "DELETE FROM stream_events WHERE tenant_id = ? AND run_id = ? AND step > ?",
]
"""What a rollback removes: every step after ``after_step`` and what hangs on it. Never the
effect ledger (what the rolled-back steps dispatched happened), the meter (those bytes were
written) or the audit log."""
Q_ROLLBACK_RUN = """
UPDATE runs SET step = ?, next_nodes = '[]', status = ?, incarnation = ?, error = NULL,
    state_digest = NULL, inbox = NULL, inbox_crc = NULL, cancel_requested = 0,
    wake_at = NULL, updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND (status IN ('done', 'interrupted', 'failed',
    'cancelled')) IS TRUE AND (lease_expires_at IS NULL OR lease_expires_at < ?) IS TRUE
    AND (step >= ?) IS TRUE
RETURNING step
"""
"""Only a run that has stopped and that no live lease holds (its worker let it go), and
only back (``step >= after_step``); the conditions beside the key are wrapped so that
PostgreSQL finds the row by its key."""
Q_OPEN_QUESTIONS = """
SELECT COUNT(*) FROM interrupts WHERE tenant_id = ? AND run_id = ? AND step = ?
"""
"""The questions a rolled-back run's first step had asked: open again after the rollback."""
