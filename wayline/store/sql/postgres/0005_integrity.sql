-- 0005: every stored payload carries a checksum over its identity and bytes (CRC-32),
-- verified on every read, so a flipped byte, a truncated value or a row copied to another
-- run is reported as corruption instead of being folded into a run's state. NULL: a row
-- written before this migration (read without the check). Runs get an incarnation, so the
-- idempotency keys derived for a run started again under a purged run's id are new keys.
ALTER TABLE deltas ADD COLUMN IF NOT EXISTS crc BIGINT;
ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS crc BIGINT;
ALTER TABLE segments ADD COLUMN IF NOT EXISTS crc BIGINT;
ALTER TABLE pending_writes ADD COLUMN IF NOT EXISTS crc BIGINT;
ALTER TABLE blobs ADD COLUMN IF NOT EXISTS crc BIGINT;
ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS crc BIGINT;
ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS resume_crc BIGINT;
ALTER TABLE effects ADD COLUMN IF NOT EXISTS result_crc BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS inbox_crc BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS incarnation TEXT NOT NULL DEFAULT '';
