"""Named queries of the HTTP server's tables (``api_keys``, ``threads``, ``thread_runs``),
with ``?`` placeholders (rewritten per backend). Every query names the tenant, bar one:
finding a key by its id, which is how a request's tenant is learned in the first place."""

Q_INSERT_KEY = """
INSERT INTO api_keys (tenant_id, key_id, key_hash, actor, roles, scopes, label, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""
_KEY_COLUMNS = "tenant_id, key_id, key_hash, actor, roles, scopes, label, created_at, revoked_at"
Q_FIND_KEY = f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_id = ?"
Q_FIND_KEY_RLS = f"SELECT {_KEY_COLUMNS} FROM wayline_find_key(?)"
Q_LIST_KEYS = f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE tenant_id = ? ORDER BY created_at"
Q_REVOKE_KEY = """
UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND key_id = ? AND revoked_at IS NULL
"""

_THREAD_COLUMNS = "tenant_id, thread_id, metadata, created_at, updated_at"
Q_INSERT_THREAD = f"""
INSERT INTO threads ({_THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
"""
Q_GET_THREAD = f"SELECT {_THREAD_COLUMNS} FROM threads WHERE tenant_id = ? AND thread_id = ?"
Q_SEARCH_THREADS = f"""
SELECT {_THREAD_COLUMNS} FROM threads WHERE tenant_id = ?
ORDER BY updated_at DESC LIMIT ? OFFSET ?
"""
Q_COUNT_THREADS = "SELECT COUNT(*) FROM threads WHERE tenant_id = ?"
Q_UPDATE_THREAD = """
UPDATE threads SET metadata = ?, updated_at = ? WHERE tenant_id = ? AND thread_id = ?
"""
Q_DELETE_THREAD = "DELETE FROM threads WHERE tenant_id = ? AND thread_id = ?"
Q_DELETE_THREAD_RUNS = "DELETE FROM thread_runs WHERE tenant_id = ? AND thread_id = ?"

_RUN_COLUMNS = (
    "tenant_id, run_id, thread_id, assistant_id, status, start_step, metadata, kwargs, "
    "created_at, updated_at"
)
Q_INSERT_RUN = f"INSERT INTO thread_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
Q_GET_RUN = f"""
SELECT {_RUN_COLUMNS} FROM thread_runs WHERE tenant_id = ? AND thread_id = ? AND run_id = ?
"""
Q_LIST_RUNS = f"""
SELECT {_RUN_COLUMNS} FROM thread_runs
WHERE tenant_id = ? AND thread_id = ? AND (CAST(? AS TEXT) IS NULL OR status = ?)
ORDER BY created_at DESC LIMIT ? OFFSET ?
"""
Q_NEXT_START_STEP = """
SELECT MIN(start_step) FROM thread_runs
WHERE tenant_id = ? AND thread_id = ? AND created_at > ? AND start_step > -2
"""
"""Where the runs a thread took after a given one start (NULL: none came after it; a queued
run that has not started yet, start_step -2, does not count)."""
Q_SET_START_STEP = """
UPDATE thread_runs SET start_step = ?, updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND start_step = -2
"""
"""A queued run's first step, once its input reached the thread's inbox."""
Q_LATEST_RUN = f"""
SELECT {_RUN_COLUMNS} FROM thread_runs WHERE tenant_id = ? AND thread_id = ?
ORDER BY created_at DESC LIMIT 1
"""
Q_DELETE_RUN = "DELETE FROM thread_runs WHERE tenant_id = ? AND run_id = ?"
"""A run rolled back (``multitask_strategy="rollback"``): its API record goes with its steps."""
Q_SET_RUN_STATUS = """
UPDATE thread_runs SET status = ?, updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND status IN ('pending', 'running')
"""
Q_REOPEN = """
UPDATE runs SET status = 'done', cancel_requested = 0, updated_at = ?
WHERE tenant_id = ? AND run_id = ? AND (status = 'cancelled') IS TRUE
"""
"""A run cancelled through the API (``action=interrupt``) keeps its steps and its thread
goes on: the next API run reopens it before handing it new input."""
Q_WORKERS = """
SELECT lease_owner, tenant_id, run_id, graph_name, lease_expires_at, step FROM runs
WHERE tenant_id = ? AND lease_owner IS NOT NULL ORDER BY lease_owner, run_id
"""
Q_UPDATE_THREAD_TOUCH = "UPDATE threads SET updated_at = ? WHERE tenant_id = ? AND thread_id = ?"
Q_APPROVALS_WAITING = """
SELECT i.tenant_id, COUNT(*) FROM interrupts i
JOIN runs r ON r.tenant_id = i.tenant_id AND r.run_id = i.run_id AND i.step = r.step + 1
WHERE r.status = 'interrupted' AND i.resume IS NULL AND i.approvers IS NOT NULL
GROUP BY i.tenant_id
"""
"""Open approvals per tenant, for the operator's ``wayline.approvals.waiting`` gauge: the
one query that spans tenants on purpose (it returns counts by tenant, never a row)."""
