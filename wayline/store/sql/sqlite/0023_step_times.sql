-- 0023: when each step was committed, so a past checkpoint has its own created_at as
-- LangGraph's does (its ts), not None. Bookkeeping beside the payload, not metered. SQLite
-- cannot add a column with a computed default: the store writes it (time.time()).
ALTER TABLE deltas ADD COLUMN committed_at REAL;
