-- 0007: the claim is an index lookup however long the queue. Pending runs get a partial
-- index in claim order; running runs are not in it, so a step commit (which moves
-- updated_at) writes no page of it. Waiting runs (interrupted, parked) are in no claim range.
CREATE INDEX IF NOT EXISTS runs_queued ON runs (graph_name, graph_version, updated_at)
    WHERE status = 'pending';
