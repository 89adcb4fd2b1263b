-- 0014: long-term memory (wayline.memory, LangGraph's BaseStore) beside the runs, tenant
-- first in every key. An item keeps its source (run, step, node or a caller's reference),
-- when it was observed, its data class and subject; a put over it or an invalidation keeps
-- the earlier version in memory_history. memory_vectors holds the embeddings search ranks by.
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
