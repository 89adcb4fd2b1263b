-- 0008: data classes. A run names its data subject (indexed per tenant, for erasure and
-- export by subject), records the class of each labelled channel as its schema declared it
-- (JSON {channel: class}; unlabelled channels are "default"), and which classes have been
-- redacted from it and when (JSON {class: time}).
ALTER TABLE runs ADD COLUMN subject TEXT;
ALTER TABLE runs ADD COLUMN classes TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN redacted TEXT NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS runs_by_subject ON runs (tenant_id, subject);
-- Interrupts and effect results carry the class their node gave them
-- (interrupt(..., classified=...), ctx.effect(..., classified=...)).
ALTER TABLE interrupts ADD COLUMN cls TEXT NOT NULL DEFAULT 'default';
ALTER TABLE effects ADD COLUMN cls TEXT NOT NULL DEFAULT 'default';
-- Crypto-shredding (encrypted stores): one data key per tenant, data subject and class,
-- wrapped (sealed) by the tenant's key. Classified values of a subject's runs are sealed
-- under it inside their rows; erasing the subject sets wrapped to NULL (erased_at says
-- when), so every copy of those values, wherever it lies, is ciphertext without a key.
-- The subject is kept as its digest only.
CREATE TABLE IF NOT EXISTS subject_keys (
    tenant_id      TEXT NOT NULL,
    key_id         TEXT NOT NULL,
    subject_digest TEXT NOT NULL,
    cls            TEXT NOT NULL,
    wrapped        BLOB,
    created_at     REAL NOT NULL,
    erased_at      REAL,
    PRIMARY KEY (tenant_id, key_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS subject_keys_by_subject ON subject_keys (tenant_id, subject_digest, cls);
