-- 0003: governance. An interrupt that is an approval carries its proposal's digest, who may
-- decide and when the proposal expires; every request and decision goes to an append-only
-- audit log; a run records the version of its state schema.
ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS digest TEXT;
ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS approvers TEXT;
ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS expires_at DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS schema_version TEXT NOT NULL DEFAULT '';
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
