-- 0004: fewer pages written per step commit (a sync step wrote ~8 WAL pages before; each
-- page is paid for at fsync; now ~3.5). runs_by_status no longer indexes updated_at, which
-- every commit changes, and deltas carry their own meter breakdown (sizes: per-channel
-- bytes) instead of separate meter rows and their index.
DROP INDEX IF EXISTS runs_by_status;
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (tenant_id, status);
ALTER TABLE deltas ADD COLUMN sizes TEXT;
