-- 0015: what wakes a waiting run. An interrupt row says what its expiry does (on_expire:
-- 'wake' for a durable timer, else JSON {"do": "fail" | "resume" | "goto", ...}); an
-- interrupted run whose first such expiry is due is found by runs_waking, so the claim
-- query is its wake-up path (a sleeping run is pending with queued_at = wake_at instead,
-- found by runs_queued as a scheduled retry is).
ALTER TABLE interrupts ADD COLUMN on_expire TEXT;
CREATE INDEX IF NOT EXISTS runs_waking ON runs (graph_name, graph_version, wake_at)
    WHERE status = 'interrupted' AND wake_at IS NOT NULL;

-- Schedules (crons): a graph's input handed to a run at every tick of a cron expression.
-- A worker serving the graph fires a due schedule in one transaction that locks its row,
-- queues the tick's run and moves next_at on, so a tick fires once however many workers
-- race for it, and a worker killed mid-fire leaves nothing of it behind.
CREATE TABLE IF NOT EXISTS schedules (
    tenant_id      TEXT    NOT NULL,
    schedule_id    TEXT    NOT NULL,
    graph_name     TEXT    NOT NULL,
    graph_version  TEXT    NOT NULL,
    schema_version TEXT    NOT NULL DEFAULT '',
    durability     TEXT    NOT NULL,
    cron           TEXT    NOT NULL,
    timezone       TEXT    NOT NULL DEFAULT 'UTC',
    thread_id      TEXT,
    inbox          BLOB   NOT NULL,
    inbox_crc      INTEGER,
    next_at        REAL,
    enabled        INTEGER NOT NULL DEFAULT 1,
    end_at         REAL,
    fires          INTEGER NOT NULL DEFAULT 0,
    last_fired_at  REAL,
    last_run_id    TEXT,
    api            TEXT,
    metadata       TEXT    NOT NULL DEFAULT '{}',
    created_at     REAL    NOT NULL,
    updated_at     REAL    NOT NULL,
    PRIMARY KEY (tenant_id, schedule_id)
);

CREATE INDEX IF NOT EXISTS schedules_due ON schedules (graph_name, graph_version, next_at)
    WHERE enabled = 1;

-- Notifications (approval requested, run ended, effect parked) are effects of kind
-- 'notify', written with the commit that moves their run; senders find the undelivered.
CREATE INDEX IF NOT EXISTS effects_outbox ON effects (updated_at)
    WHERE kind = 'notify' AND status IN ('PENDING', 'EXECUTING');
