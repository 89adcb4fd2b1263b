-- 0011: the queue is ordered by when a run was queued, not by its last commit. A step commit
-- moves updated_at; while runs_queued was keyed by it, every step of a running run changed an
-- indexed column, so PostgreSQL could not update the run row in place (HOT) and wrote an
-- entry into every index of runs. queued_at moves only when a run (re)enters the queue.
ALTER TABLE runs ADD COLUMN queued_at REAL NOT NULL DEFAULT 0;
UPDATE runs SET queued_at = updated_at;
DROP INDEX IF EXISTS runs_queued;
CREATE INDEX IF NOT EXISTS runs_queued ON runs (graph_name, graph_version, queued_at)
    WHERE status = 'pending';
