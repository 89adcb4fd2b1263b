-- 0006: the HTTP server's own rows (wayline serve). API keys are stored as a SHA-256 of
-- their secret; a key fixes the tenant and the actor of every request made with it.
-- A thread's state is the wayline run of the same id: threads and thread_runs only say
-- who made a thread and what each API run asked for (never the input: that is the run's
-- metered inbox), so they hold no run payload.
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
