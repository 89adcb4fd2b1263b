-- 0023: when each step was committed, so a past checkpoint has its own created_at as
-- LangGraph's does (its ts), not None. Bookkeeping beside the payload, not metered. Every
-- insert path (one row, COPY, the one-trip statements) leaves it to the default: the
-- time of the commit's transaction, as SQLite's one time a commit.
ALTER TABLE deltas ADD COLUMN IF NOT EXISTS committed_at DOUBLE PRECISION;
ALTER TABLE deltas ALTER COLUMN committed_at SET DEFAULT extract(epoch from now());
