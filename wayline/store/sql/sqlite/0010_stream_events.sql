-- 0010: what a node emits while it runs (stream modes custom, messages) for a run whose
-- input asked for them, so the server's stream can replay it beside the committed steps.
CREATE TABLE IF NOT EXISTS stream_events (
    tenant_id  TEXT    NOT NULL,
    run_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    node       TEXT    NOT NULL,
    mode       TEXT    NOT NULL,
    payload    BLOB    NOT NULL,
    crc        INTEGER,
    created_at REAL    NOT NULL,
    PRIMARY KEY (tenant_id, run_id, seq)
) WITHOUT ROWID;
