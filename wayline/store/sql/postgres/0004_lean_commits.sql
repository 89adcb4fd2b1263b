-- 0004: fewer pages written per step commit. runs_by_status no longer indexes updated_at,
-- which every commit changes; deltas carry their own meter breakdown (sizes: per-channel
-- bytes) instead of separate meter rows.
DROP INDEX IF EXISTS runs_by_status;
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (tenant_id, status);
ALTER TABLE deltas ADD COLUMN IF NOT EXISTS sizes TEXT;
