"""Named queries of ``metric_samples`` (the workers' metrics, a minute a row) and of the
audit's scheduled verifications, with ``?`` placeholders (rewritten per backend). Every
query names the tenant."""

Q_PUT_SAMPLE = """
INSERT INTO metric_samples (tenant_id, metric, attrs, minute, source, count, total, buckets)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant_id, metric, attrs, minute, source) DO UPDATE SET
    count = excluded.count, total = excluded.total, buckets = excluded.buckets
"""
"""A process writes its whole minute each time it flushes: the row is replaced, not added
to, so a flush repeated (or made by two workers of one process) counts once."""
Q_LOAD_SAMPLES = """
SELECT metric, attrs, minute, count, total, buckets FROM metric_samples
WHERE tenant_id = ? AND minute >= ? ORDER BY minute
"""
Q_PRUNE_SAMPLES = "DELETE FROM metric_samples WHERE tenant_id = ? AND minute < ?"
Q_VERIFY_FINDINGS = """
SELECT run_id, at, actor, outcome, detail FROM audit
WHERE tenant_id = ? AND action = 'verify' AND at >= ? ORDER BY at DESC LIMIT ?
"""
"""What verification found wrong (``outcome`` diverged or corrupt), newest first."""
