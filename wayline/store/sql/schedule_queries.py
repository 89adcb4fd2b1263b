"""Named queries of ``schedules`` (``wayline.store.schedules``), with ``?`` placeholders
(rewritten per backend). Every query names the tenant, bar the due-schedule search of a
worker serving every tenant (``CAST(? AS TEXT) IS NULL``), as the claim query does."""

SCHEDULE_COLUMNS = (
    "tenant_id, schedule_id, graph_name, graph_version, schema_version, durability, cron, "
    "timezone, thread_id, inbox, inbox_crc, next_at, enabled, end_at, fires, last_fired_at, "
    "last_run_id, api, metadata, created_at, updated_at, fingerprint, shape, engine"
)
Q_INSERT = f"""
INSERT INTO schedules ({SCHEDULE_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, schedule_id) DO NOTHING
"""
Q_GET = f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = ? AND schedule_id = ?"
Q_LIST = f"""
SELECT {SCHEDULE_COLUMNS} FROM schedules
WHERE tenant_id = ? AND (CAST(? AS TEXT) IS NULL OR graph_name = ?)
    AND (CAST(? AS TEXT) IS NULL OR thread_id = ?)
ORDER BY created_at, schedule_id LIMIT ? OFFSET ?
"""
Q_UPDATE = """
UPDATE schedules SET cron = ?, timezone = ?, next_at = ?, enabled = ?, end_at = ?, inbox = ?,
    inbox_crc = ?, api = ?, metadata = ?, updated_at = ?
WHERE tenant_id = ? AND schedule_id = ?
"""
Q_DELETE = "DELETE FROM schedules WHERE tenant_id = ? AND schedule_id = ?"
Q_DUE = f"""
SELECT {SCHEDULE_COLUMNS} FROM schedules
WHERE graph_name = ? AND graph_version = ? AND enabled = 1 AND next_at <= ?
    AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)
ORDER BY next_at LIMIT 1{{lock}}
"""
"""The first due schedule of a graph version (``schedules_due``), locked for the fire's
transaction (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so two workers fire two schedules at
once, never one twice; SQLite: the transaction holds the write lock)."""
Q_FIRED = """
UPDATE schedules SET next_at = ?, enabled = ?, fires = fires + 1, last_fired_at = ?,
    last_run_id = ?, updated_at = ?
WHERE tenant_id = ? AND schedule_id = ? AND next_at = ? AND enabled = 1
"""
"""The tick is spent: conditional on it still being the schedule's next, so a tick fires
once even where the row lock did not hold (it is the fence)."""
Q_NEXT_DUE = """
SELECT MIN(next_at) FROM schedules
WHERE ({graphs}) AND enabled = 1 AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)
"""
Q_RUN_STEP = "SELECT step FROM runs WHERE tenant_id = ? AND run_id = ?"
Q_THREAD_BUSY = """
SELECT CASE WHEN status IN ('pending', 'running') OR inbox IS NOT NULL THEN 1
    WHEN EXISTS (SELECT 1 FROM run_queue q WHERE q.tenant_id = runs.tenant_id
        AND q.run_id = runs.run_id AND q.promoted_at IS NULL) THEN 1 ELSE 0 END
FROM runs WHERE tenant_id = ? AND run_id = ?
"""
"""Whether a thread's run is busy (queued, held, or with input queued behind it): a cron
tick with ``multitask_strategy="enqueue"`` waits in its queue then."""
