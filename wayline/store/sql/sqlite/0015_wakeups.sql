-- 0015: what wakes a waiting run. An interrupt row says what its expiry does (on_expire:
-- 'wake' for a durable timer, else JSON {"do": "fail" | "resume" | "goto", ...}); an
-- interrupted run whose first such expiry is due is found by runs_waking, so the claim
-- query is its wake-up path (a sleeping run is pending with queued_at = wake_at instead,
-- found by runs_queued as a scheduled retry is).
ALTER TABLE interrupts ADD COLUMN on_expire TEXT;
CREATE INDEX IF NOT EXISTS runs_waking ON runs (graph_name, graph_version, wake_at)
    WHERE status = 'interrupted' AND wake_at IS NOT NULL;
