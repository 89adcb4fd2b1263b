-- The current wayline PostgreSQL schema (version 23): what the numbered migrations
-- beside this file build, applied in order (tests/store/test_schema.py checks it).
-- Every table is keyed by tenant_id first.
CREATE TABLE IF NOT EXISTS wayline_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS runs (
    tenant_id        TEXT    NOT NULL,
    run_id           TEXT    NOT NULL,
    graph_name       TEXT    NOT NULL,
    graph_version    TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    step             BIGINT  NOT NULL DEFAULT -1,
    next_nodes       TEXT    NOT NULL DEFAULT '[]',
    durability       TEXT    NOT NULL,
    fencing_token    BIGINT  NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at DOUBLE PRECISION,
    error            TEXT,
    state_digest     TEXT,
    created_at       DOUBLE PRECISION NOT NULL,
    updated_at       DOUBLE PRECISION NOT NULL,
    inbox            BYTEA,
    wake_at          DOUBLE PRECISION,
    attempts         BIGINT NOT NULL DEFAULT 0,
    cancel_requested BIGINT NOT NULL DEFAULT 0,
    schema_version   TEXT    NOT NULL DEFAULT '',
    inbox_crc        BIGINT,
    incarnation      TEXT NOT NULL DEFAULT '',
    subject          TEXT,
    classes          TEXT NOT NULL DEFAULT '{}',
    redacted         TEXT NOT NULL DEFAULT '{}',
    queued_at        DOUBLE PRECISION NOT NULL DEFAULT 0,
    fingerprint      TEXT NOT NULL DEFAULT '',
    shape            TEXT,
    engine           TEXT NOT NULL DEFAULT 'wayline',
    PRIMARY KEY (tenant_id, run_id)
);

CREATE INDEX IF NOT EXISTS runs_claimable ON runs (graph_name, status, lease_expires_at);
CREATE INDEX IF NOT EXISTS runs_queued ON runs (graph_name, graph_version, fingerprint, queued_at)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS runs_by_subject ON runs (tenant_id, subject)
    WHERE subject IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_waking ON runs (graph_name, graph_version, wake_at)
    WHERE status = 'interrupted' AND wake_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS deltas (
    tenant_id TEXT    NOT NULL,
    run_id    TEXT    NOT NULL,
    step      BIGINT  NOT NULL,
    payload   BYTEA    NOT NULL,
    fencing_token BIGINT,
    sizes     TEXT,
    crc              BIGINT,
    committed_at DOUBLE PRECISION DEFAULT extract(epoch from now()),
    PRIMARY KEY (tenant_id, run_id, step)
);

CREATE TABLE IF NOT EXISTS snapshots (
    tenant_id TEXT    NOT NULL,
    run_id    TEXT    NOT NULL,
    step      BIGINT  NOT NULL,
    payload   BYTEA    NOT NULL,
    crc              BIGINT,
    sizes     TEXT,
    PRIMARY KEY (tenant_id, run_id, step)
);

CREATE TABLE IF NOT EXISTS pending_writes (
    tenant_id TEXT    NOT NULL,
    run_id    TEXT    NOT NULL,
    step      BIGINT  NOT NULL,
    task_id   TEXT    NOT NULL,
    payload   BYTEA    NOT NULL,
    crc              BIGINT,
    PRIMARY KEY (tenant_id, run_id, step, task_id)
);

CREATE TABLE IF NOT EXISTS interrupts (
    tenant_id    TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    step         BIGINT  NOT NULL,
    task_id      TEXT    NOT NULL,
    idx          BIGINT  NOT NULL,
    interrupt_id TEXT    NOT NULL,
    value        BYTEA    NOT NULL,
    resume       BYTEA,
    digest       TEXT,
    approvers    TEXT,
    expires_at   DOUBLE PRECISION,
    crc              BIGINT,
    resume_crc       BIGINT,
    cls              TEXT NOT NULL DEFAULT 'default',
    on_expire        TEXT,
    PRIMARY KEY (tenant_id, run_id, step, task_id, idx)
);

CREATE TABLE IF NOT EXISTS segments (
    tenant_id  TEXT    NOT NULL,
    run_id     TEXT    NOT NULL,
    seg_id     TEXT    NOT NULL,
    channel    TEXT    NOT NULL,
    level      BIGINT  NOT NULL,
    first_step BIGINT  NOT NULL,
    last_step  BIGINT  NOT NULL,
    payload    BYTEA    NOT NULL,
    crc              BIGINT,
    PRIMARY KEY (tenant_id, run_id, seg_id)
);

-- Content-addressed large values, stored once per tenant; blob_refs says which runs use
-- each, so a purge removes only the blobs no other run references.
CREATE TABLE IF NOT EXISTS blobs (
    tenant_id TEXT NOT NULL,
    digest    TEXT NOT NULL,
    payload   BYTEA NOT NULL,
    crc              BIGINT,
    PRIMARY KEY (tenant_id, digest)
);

CREATE TABLE IF NOT EXISTS blob_refs (
    tenant_id TEXT NOT NULL,
    run_id    TEXT NOT NULL,
    digest    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, run_id, digest)
);

CREATE INDEX IF NOT EXISTS blob_refs_by_digest ON blob_refs (tenant_id, digest);

-- The instrument: one row per (commit, table, channel). Never pre-summed.
CREATE TABLE IF NOT EXISTS meter (
    id        BIGSERIAL PRIMARY KEY,
    tenant_id TEXT    NOT NULL,
    run_id    TEXT    NOT NULL,
    step      BIGINT  NOT NULL,
    tbl       TEXT    NOT NULL,
    channel   TEXT    NOT NULL,
    bytes     BIGINT  NOT NULL
);

CREATE INDEX IF NOT EXISTS meter_by_run ON meter (tenant_id, run_id, step);

-- The effect ledger: one row per idempotency key per tenant. A business key shared by two
-- runs is one row: the second run gets the first one's outcome instead of a second effect.
CREATE TABLE IF NOT EXISTS effects (
    tenant_id      TEXT    NOT NULL,
    effect_key     TEXT    NOT NULL,
    run_id         TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    node           TEXT    NOT NULL,
    step           BIGINT NOT NULL,
    name           TEXT    NOT NULL,
    seq            BIGINT NOT NULL,
    attempt        BIGINT NOT NULL,
    request_digest TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    fencing_token  BIGINT NOT NULL,
    result         BYTEA,
    error          TEXT,
    created_at     DOUBLE PRECISION NOT NULL,
    updated_at     DOUBLE PRECISION NOT NULL,
    result_crc       BIGINT,
    cls              TEXT NOT NULL DEFAULT 'default',
    PRIMARY KEY (tenant_id, effect_key)
);

-- Led by the run id alone (0022): a lookup by key must find the primary key (issue 31).
CREATE INDEX IF NOT EXISTS effects_by_run ON effects (run_id);

-- Every approval request and decision, append-only (purge erases a run's rows with it).
CREATE TABLE IF NOT EXISTS audit (
    id        BIGSERIAL PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    run_id    TEXT NOT NULL,
    at        DOUBLE PRECISION NOT NULL,
    actor     TEXT NOT NULL,
    action    TEXT NOT NULL,
    digest    TEXT,
    outcome   TEXT NOT NULL,
    detail    TEXT
);

CREATE INDEX IF NOT EXISTS audit_by_run ON audit (tenant_id, run_id, id);

-- The HTTP server's rows (0006): API keys stored hashed, threads, the API's runs.
CREATE TABLE IF NOT EXISTS api_keys (
    tenant_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    key_hash   TEXT NOT NULL,
    actor      TEXT NOT NULL,
    roles      TEXT NOT NULL DEFAULT '',
    scopes     TEXT NOT NULL DEFAULT '',
    label      TEXT NOT NULL DEFAULT '',
    created_at DOUBLE PRECISION NOT NULL,
    revoked_at DOUBLE PRECISION,
    PRIMARY KEY (tenant_id, key_id)
);

CREATE UNIQUE INDEX IF NOT EXISTS api_keys_by_id ON api_keys (key_id);

CREATE TABLE IF NOT EXISTS threads (
    tenant_id  TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
);

CREATE INDEX IF NOT EXISTS threads_by_update ON threads (tenant_id, updated_at);

CREATE TABLE IF NOT EXISTS thread_runs (
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    status       TEXT NOT NULL,
    start_step   BIGINT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}',
    kwargs       TEXT NOT NULL DEFAULT '{}',
    created_at   DOUBLE PRECISION NOT NULL,
    updated_at   DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
);

CREATE INDEX IF NOT EXISTS thread_runs_by_thread ON thread_runs (tenant_id, thread_id, created_at);

-- Crypto-shredding: a data key per (tenant, subject, class), wrapped by the tenant's key;
-- erasure sets wrapped to NULL. The subject is kept as its digest only.
CREATE TABLE IF NOT EXISTS subject_keys (
    tenant_id      TEXT NOT NULL,
    key_id         TEXT NOT NULL,
    subject_digest TEXT NOT NULL,
    cls            TEXT NOT NULL,
    wrapped        BYTEA,
    created_at     DOUBLE PRECISION NOT NULL,
    erased_at      DOUBLE PRECISION,
    PRIMARY KEY (tenant_id, key_id)
);

CREATE UNIQUE INDEX IF NOT EXISTS subject_keys_by_subject ON subject_keys (tenant_id, subject_digest, cls);

-- LangGraph threads (wayline.langgraph): a thread is a run; values by (thread, namespace,
-- channel, version), an append-only value as its suffix over base (root: its full copy)
-- or by reference to the writes it is made of (writes_of).
CREATE TABLE IF NOT EXISTS lg_checkpoints (
    tenant_id     TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    checkpoint_ns TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    parent_id     TEXT,
    lg_run_id     TEXT,
    step          BIGINT NOT NULL,
    payload       BYTEA   NOT NULL,
    crc           BIGINT,
    created_at    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, run_id, checkpoint_ns, checkpoint_id)
);
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
    payload       BYTEA   NOT NULL,
    crc           BIGINT,
    PRIMARY KEY (tenant_id, run_id, checkpoint_ns, channel, root, version)
);
CREATE UNIQUE INDEX IF NOT EXISTS lg_values_by_version
    ON lg_values (tenant_id, run_id, checkpoint_ns, channel, version);
CREATE TABLE IF NOT EXISTS lg_writes (
    tenant_id     TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    checkpoint_ns TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    idx           BIGINT NOT NULL,
    channel       TEXT    NOT NULL,
    task_path     TEXT    NOT NULL,
    payload       BYTEA   NOT NULL,
    crc           BIGINT,
    PRIMARY KEY (tenant_id, run_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
-- 0010: node-emitted stream events (custom, messages) of runs that asked for them.
CREATE TABLE IF NOT EXISTS stream_events (
    tenant_id  TEXT    NOT NULL,
    run_id     TEXT    NOT NULL,
    seq        BIGINT  NOT NULL,
    step       BIGINT  NOT NULL,
    node       TEXT    NOT NULL,
    mode       TEXT    NOT NULL,
    payload    BYTEA   NOT NULL,
    crc        BIGINT,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, run_id, seq)
);
-- 0014: long-term memory (wayline.memory): items, their history, their embeddings.
CREATE TABLE IF NOT EXISTS memory_items (
    tenant_id      TEXT    NOT NULL,
    namespace      TEXT    NOT NULL,
    key            TEXT    NOT NULL,
    value          BYTEA   NOT NULL,
    crc            BIGINT,
    created_at     DOUBLE PRECISION NOT NULL,
    updated_at     DOUBLE PRECISION NOT NULL,
    ttl_minutes    DOUBLE PRECISION,
    expires_at     DOUBLE PRECISION,
    run_id         TEXT,
    step           BIGINT,
    node           TEXT,
    source         TEXT,
    observed_at    DOUBLE PRECISION NOT NULL,
    subject        TEXT,
    cls            TEXT,
    invalidated_at DOUBLE PRECISION,
    invalid_reason TEXT,
    PRIMARY KEY (tenant_id, namespace, key)
);
CREATE INDEX IF NOT EXISTS memory_items_expiry ON memory_items (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS memory_items_subject ON memory_items (tenant_id, subject)
    WHERE subject IS NOT NULL;
CREATE TABLE IF NOT EXISTS memory_history (
    tenant_id   TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    value       BYTEA,
    crc         BIGINT,
    updated_at  DOUBLE PRECISION NOT NULL,
    run_id      TEXT,
    step        BIGINT,
    node        TEXT,
    source      TEXT,
    observed_at DOUBLE PRECISION NOT NULL,
    subject     TEXT,
    cls         TEXT,
    ended_at    DOUBLE PRECISION NOT NULL,
    end_reason  TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, namespace, key, version)
);
CREATE INDEX IF NOT EXISTS memory_history_subject ON memory_history (tenant_id, subject)
    WHERE subject IS NOT NULL;
CREATE TABLE IF NOT EXISTS memory_vectors (
    tenant_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    path      TEXT NOT NULL,
    embedding REAL[] NOT NULL,
    PRIMARY KEY (tenant_id, namespace, key, path)
);

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
    inbox          BYTEA   NOT NULL,
    inbox_crc      BIGINT,
    next_at        DOUBLE PRECISION,
    enabled        INTEGER NOT NULL DEFAULT 1,
    end_at         DOUBLE PRECISION,
    fires          INTEGER NOT NULL DEFAULT 0,
    last_fired_at  DOUBLE PRECISION,
    last_run_id    TEXT,
    api            TEXT,
    metadata       TEXT    NOT NULL DEFAULT '{}',
    created_at     DOUBLE PRECISION    NOT NULL,
    updated_at     DOUBLE PRECISION    NOT NULL,
    fingerprint    TEXT    NOT NULL DEFAULT '',
    shape          TEXT,
    engine         TEXT    NOT NULL DEFAULT 'wayline',
    PRIMARY KEY (tenant_id, schedule_id)
);

CREATE INDEX IF NOT EXISTS schedules_due ON schedules (graph_name, graph_version, next_at)
    WHERE enabled = 1;

-- Notifications (approval requested, run ended, effect parked) are effects of kind
-- 'notify', written with the commit that moves their run; senders find the undelivered.
CREATE INDEX IF NOT EXISTS effects_outbox ON effects (updated_at)
    WHERE kind = 'notify' AND status IN ('PENDING', 'EXECUTING');
-- 0016: assistants made over the API, and every version of each.
CREATE TABLE IF NOT EXISTS assistants (
    tenant_id    TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    graph_id     TEXT NOT NULL,
    version      BIGINT NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL,
    updated_at   DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, assistant_id)
);
CREATE TABLE IF NOT EXISTS assistant_versions (
    tenant_id    TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    version      BIGINT NOT NULL,
    graph_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT,
    config       TEXT NOT NULL DEFAULT '{}',
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, assistant_id, version)
);

-- 0018: workers' metrics, a minute a row (wayline.metrics_flush).
CREATE TABLE IF NOT EXISTS metric_samples (
    tenant_id TEXT             NOT NULL,
    metric    TEXT             NOT NULL,
    attrs     TEXT             NOT NULL,
    minute    BIGINT           NOT NULL,
    source    TEXT             NOT NULL,
    count     BIGINT           NOT NULL,
    total     DOUBLE PRECISION NOT NULL,
    buckets   TEXT             NOT NULL,
    PRIMARY KEY (tenant_id, metric, attrs, minute, source)
);
CREATE INDEX IF NOT EXISTS metric_samples_by_minute ON metric_samples (tenant_id, minute);

-- 0021: a busy thread's queued input (multitask_strategy "enqueue"), oldest first.
CREATE TABLE IF NOT EXISTS run_queue (
    tenant_id    TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    seq          BIGINT NOT NULL,
    label        TEXT    NOT NULL,
    inbox        BYTEA,
    inbox_crc    BIGINT,
    created_at   DOUBLE PRECISION NOT NULL,
    promoted_at  DOUBLE PRECISION,
    from_step    BIGINT,
    prior_status TEXT,
    PRIMARY KEY (tenant_id, run_id, seq)
);
CREATE INDEX IF NOT EXISTS run_queue_waiting ON run_queue (created_at)
    WHERE promoted_at IS NULL;
