"""Named queries of LangGraph threads (``wayline.langgraph``), in the dialect SQLite and
PostgreSQL share; ``?`` placeholders, rewritten per backend like ``queries``. Every query
names the tenant and the thread (``run_id``) first."""

from __future__ import annotations

Q_LG_ENSURE_RUN = """
INSERT INTO runs (tenant_id, run_id, graph_name, graph_version, status, step, next_nodes,
    durability, fencing_token, created_at, updated_at, attempts, cancel_requested,
    schema_version, incarnation, engine)
VALUES (?, ?, 'langgraph', '', 'done', -1, '[]', 'sync', 0, ?, ?, 0, 0, '', ?, 'langgraph')
ON CONFLICT (tenant_id, run_id) DO UPDATE SET updated_at = excluded.updated_at
WHERE runs.updated_at < excluded.updated_at - 1.0
"""
"""A thread is a run: its row makes ``wayline runs bytes``, purge, export and retention
(by age, status ``done``) work on it. No worker serves graph ``langgraph``: never claimed.
``updated_at`` moves at most once a second: a step that finds the row that fresh leaves its
page alone (one 4 KiB WAL frame fewer a commit on SQLite, for a clock read by retention in
days and by listings in order)."""

Q_LG_FENCE = """
UPDATE runs SET updated_at = ?, step = COALESCE(?, step),
    inbox = CASE WHEN ? = 1 THEN NULL ELSE inbox END
WHERE tenant_id = ? AND run_id = ? AND fencing_token = ?
"""
"""A write of a thread a worker runs under a lease: only while its token is current."""

_CP_COLUMNS = "checkpoint_ns, checkpoint_id, parent_id, lg_run_id, step, payload, crc, created_at"
Q_LG_PUT_CHECKPOINT = f"""
INSERT INTO lg_checkpoints (tenant_id, run_id, {_CP_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, run_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_id = excluded.parent_id, lg_run_id = excluded.lg_run_id, step = excluded.step,
    payload = excluded.payload, crc = excluded.crc, created_at = excluded.created_at
"""
Q_LG_GET_CHECKPOINT = f"""
SELECT {_CP_COLUMNS} FROM lg_checkpoints
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
"""
Q_LG_LATEST_CHECKPOINT = f"""
SELECT {_CP_COLUMNS} FROM lg_checkpoints
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ?
ORDER BY checkpoint_id DESC LIMIT 1
"""
Q_LG_LIST = f"""
SELECT run_id, {_CP_COLUMNS} FROM lg_checkpoints
WHERE tenant_id = ? AND (CAST(? AS TEXT) IS NULL OR run_id = ?)
    AND (CAST(? AS TEXT) IS NULL OR checkpoint_ns = ?)
    AND (CAST(? AS TEXT) IS NULL OR checkpoint_id < ?)
ORDER BY checkpoint_id DESC, run_id, checkpoint_ns LIMIT ?
"""
Q_LG_THREAD_CHECKPOINTS = f"""
SELECT {_CP_COLUMNS} FROM lg_checkpoints WHERE tenant_id = ? AND run_id = ?
ORDER BY checkpoint_ns, checkpoint_id
"""

_VALUE_COLUMNS = "checkpoint_ns, channel, version, base, root, writes_of, payload, crc"
Q_LG_PUT_VALUE = f"""
INSERT INTO lg_values (tenant_id, run_id, {_VALUE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING
"""
"""A version is immutable: written once, whoever puts it again (metered only when new)."""
Q_LG_LOAD_VALUE = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?
"""
Q_LG_VALUE_RUN = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ? AND root = (
        SELECT root FROM lg_values
        WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ?
            AND version = ?)
    AND version <= ?
ORDER BY version DESC LIMIT ?
"""
"""A version and the newest rows of its chain below it, in one read: the version found by
its index, the rest one range of the primary key (a full copy is its chain's oldest row:
it comes alone)."""
Q_LG_LOAD_CHAIN = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ? AND root = ?
"""
Q_LG_CHAIN_BELOW = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ? AND root = ?
    AND version <= ?
ORDER BY version DESC LIMIT ?
"""
"""The newest rows of a chain at or below a version: one range read of the primary key
that holds a level of a value's path (its one-version deltas are consecutive versions)."""
Q_LG_CHAIN_AT = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ? AND root = ?
    AND version >= ? AND version < ? AND substr(version, 1, 10) IN ({{marks}})
"""
"""The rows of a chain whose version counters are given (``{marks}``), within one range of
the primary key: the rest of a value's path, once a skip row told its counts."""
Q_LG_VALUES_OVER_WRITES = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND writes_of IN ({{marks}})
"""
Q_LG_REWRITE_VALUE = """
UPDATE lg_values SET writes_of = NULL, payload = ?, crc = ?
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?
"""
"""A value stored by reference to writes about to be deleted gets its items inline."""
Q_LG_THREAD_VALUES = f"""
SELECT {_VALUE_COLUMNS} FROM lg_values WHERE tenant_id = ? AND run_id = ?
ORDER BY checkpoint_ns, channel, version
"""

_WRITE_COLUMNS = "checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, payload, crc"
_WRITE_MARKS = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
Q_LG_PUT_WRITE = f"""
INSERT INTO lg_writes (tenant_id, run_id, {_WRITE_COLUMNS}) VALUES ({_WRITE_MARKS})
ON CONFLICT DO NOTHING
"""
"""A task writing its regular writes twice keeps the first (LangGraph's savers do too)."""
Q_LG_REPLACE_WRITE = f"""
INSERT INTO lg_writes (tenant_id, run_id, {_WRITE_COLUMNS}) VALUES ({_WRITE_MARKS})
ON CONFLICT (tenant_id, run_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = excluded.channel, task_path = excluded.task_path, payload = excluded.payload,
    crc = excluded.crc
"""
"""Special writes (error, interrupt, resume, scheduled) replace the task's earlier one."""
Q_LG_LOAD_WRITES = f"""
SELECT {_WRITE_COLUMNS} FROM lg_writes
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
ORDER BY task_path, task_id, idx
"""
Q_LG_CHANNEL_WRITES = f"""
SELECT {_WRITE_COLUMNS} FROM lg_writes
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND checkpoint_id >= ?
    AND checkpoint_id <= ? AND channel = ?
ORDER BY checkpoint_id, task_path, task_id, idx
"""
"""The writes a chain of values stored by reference reads: one range scan of the primary
key (checkpoint ids grow with time), whatever the chain's length."""
Q_LG_THREAD_WRITES = f"""
SELECT {_WRITE_COLUMNS} FROM lg_writes WHERE tenant_id = ? AND run_id = ?
ORDER BY checkpoint_ns, checkpoint_id, task_path, task_id, idx
"""

Q_LG_CHECKPOINTS_OF_RUNS = """
SELECT run_id, checkpoint_ns, checkpoint_id FROM lg_checkpoints
WHERE tenant_id = ? AND lg_run_id IN ({marks})
"""
Q_LG_DELETE_CHECKPOINT = """
DELETE FROM lg_checkpoints
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
"""
Q_LG_DELETE_CHECKPOINT_WRITES = """
DELETE FROM lg_writes
WHERE tenant_id = ? AND run_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
"""
Q_LG_DELETE_THREAD = [
    "DELETE FROM lg_checkpoints WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM lg_values WHERE tenant_id = ? AND run_id = ?",
    "DELETE FROM lg_writes WHERE tenant_id = ? AND run_id = ?",
]
