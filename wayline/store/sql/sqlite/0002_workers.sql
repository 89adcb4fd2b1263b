-- 0002: workers. A run carries the input a worker should apply next (inbox: a new input or
-- a resume decision), the earliest time it may be claimed again (wake_at: retry backoff),
-- its run-level retry count, and whether an operator asked to cancel it. Each delta row
-- records the fencing token of the lease that wrote it.
ALTER TABLE runs ADD COLUMN inbox BLOB;
ALTER TABLE runs ADD COLUMN wake_at REAL;
ALTER TABLE runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deltas ADD COLUMN fencing_token INTEGER;
CREATE INDEX IF NOT EXISTS runs_claimable ON runs (graph_name, status, lease_expires_at);
