-- 0009: LangGraph threads on wayline's store (wayline.langgraph.WaylineSaver). A thread is
-- a run (run_id = thread id), so the meter, purge, export and retention cover it. Channel
-- values are stored once per (thread, namespace, channel, version); an append-only value is
-- stored as its suffix over base (root: the full copy its chain starts from); when that
-- suffix is exactly the writes the tasks made (writes_of: their checkpoint), by reference.
CREATE TABLE IF NOT EXISTS lg_checkpoints (
    tenant_id     TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    checkpoint_ns TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    parent_id     TEXT,
    lg_run_id     TEXT,
    step          INTEGER NOT NULL,
    payload       BLOB    NOT NULL,
    crc           INTEGER,
    created_at    REAL NOT NULL,
    PRIMARY KEY (tenant_id, run_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lg_checkpoints_by_lg_run ON lg_checkpoints (tenant_id, lg_run_id);
CREATE TABLE IF NOT EXISTS lg_values (
    tenant_id     TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    checkpoint_ns TEXT    NOT NULL,
    channel       TEXT    NOT NULL,
    version       TEXT    NOT NULL,
    base          TEXT,
    root          TEXT    NOT NULL,
    writes_of     TEXT,
    payload       BLOB    NOT NULL,
    crc           INTEGER,
    PRIMARY KEY (tenant_id, run_id, checkpoint_ns, channel, root, version)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS lg_values_by_version
    ON lg_values (tenant_id, run_id, checkpoint_ns, channel, version);
CREATE TABLE IF NOT EXISTS lg_writes (
    tenant_id     TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    checkpoint_ns TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT    NOT NULL,
    task_path     TEXT    NOT NULL,
    payload       BLOB    NOT NULL,
    crc           INTEGER,
    PRIMARY KEY (tenant_id, run_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
