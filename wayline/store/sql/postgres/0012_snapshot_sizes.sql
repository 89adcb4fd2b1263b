-- 0012: a snapshot row carries its own meter rows (JSON [table, channel, bytes]: its bytes
-- by channel and the segments new with it), as a delta row does since 0004, so a snapshot
-- step writes no meter row. Rows written before keep theirs in meter (sizes NULL).
ALTER TABLE snapshots ADD COLUMN sizes TEXT;
