-- 0006: data classes. A run names its data subject (indexed per tenant, for erasure and
-- export by subject), records the class of each labelled channel as its schema declared it
-- (JSON {channel: class}; unlabelled channels are "default"), and which classes have been
-- redacted from it and when (JSON {class: time}).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS subject TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS classes TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN IF NOT EXISTS redacted TEXT NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS runs_by_subject ON runs (tenant_id, subject);
