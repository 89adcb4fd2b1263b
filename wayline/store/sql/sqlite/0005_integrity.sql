-- 0005: every stored payload carries a checksum over its identity and bytes (CRC-32),
-- verified on every read, so a flipped byte, a truncated value or a row copied to another
-- run is reported as corruption instead of being folded into a run's state. NULL: a row
-- written before this migration (read without the check). Runs get an incarnation, so the
-- idempotency keys derived for a run started again under a purged run's id are new keys.
ALTER TABLE deltas ADD COLUMN crc INTEGER;
ALTER TABLE snapshots ADD COLUMN crc INTEGER;
ALTER TABLE segments ADD COLUMN crc INTEGER;
ALTER TABLE pending_writes ADD COLUMN crc INTEGER;
ALTER TABLE blobs ADD COLUMN crc INTEGER;
ALTER TABLE interrupts ADD COLUMN crc INTEGER;
ALTER TABLE interrupts ADD COLUMN resume_crc INTEGER;
ALTER TABLE effects ADD COLUMN result_crc INTEGER;
ALTER TABLE runs ADD COLUMN inbox_crc INTEGER;
ALTER TABLE runs ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
