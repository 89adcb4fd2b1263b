-- 0013: a run records the structural fingerprint of the graph that started it (nodes, edges,
-- branch targets, channels with their kinds and reducers, input and output keys) and that
-- shape itself (JSON), so a worker claims only runs of a graph it really has, and a graph
-- that differs is refused with the difference named. Runs written before have '' and are
-- claimed by name and version alone, as they were.
ALTER TABLE runs ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN shape TEXT;
DROP INDEX IF EXISTS runs_queued;
CREATE INDEX IF NOT EXISTS runs_queued ON runs (graph_name, graph_version, fingerprint, queued_at)
    WHERE status = 'pending';
