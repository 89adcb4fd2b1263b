-- 0021: a busy thread's queued input (multitask_strategy "enqueue"). A run's inbox holds one
-- input; the inputs given while the run is busy wait here in order, each labelled with the
-- caller's id for it, and the claim query moves the oldest into the inbox once the run has
-- stopped (its wake-up path). A moved entry stays, without its payload, saying where its
-- input began (from_step) and how the input before it ended (prior_status).
CREATE TABLE IF NOT EXISTS run_queue (
    tenant_id    TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    label        TEXT    NOT NULL,
    inbox        BLOB,
    inbox_crc    INTEGER,
    created_at   REAL    NOT NULL,
    promoted_at  REAL,
    from_step    INTEGER,
    prior_status TEXT,
    PRIMARY KEY (tenant_id, run_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_queue_waiting ON run_queue (created_at)
    WHERE promoted_at IS NULL;
