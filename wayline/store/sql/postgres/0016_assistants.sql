-- 0016: assistants made over the API (wayline serve): a configuration (config, context,
-- metadata) of a served graph. Each change is a new row of assistant_versions; the
-- assistant points at the version in use (/assistants/{id}/latest moves it).
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
