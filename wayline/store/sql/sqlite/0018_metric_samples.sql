-- 0018: the metrics workers record (wayline.metrics), a minute at a time: one row per
-- tenant, metric, attribute set, minute and process, holding that minute's histogram (its
-- bucket counts as a JSON list, the count and the sum). The dashboard's health page merges
-- them over a window; rows older than the workers' retention are deleted as they flush.
CREATE TABLE IF NOT EXISTS metric_samples (
    tenant_id TEXT    NOT NULL,
    metric    TEXT    NOT NULL,
    attrs     TEXT    NOT NULL,
    minute    INTEGER NOT NULL,
    source    TEXT    NOT NULL,
    count     INTEGER NOT NULL,
    total     REAL    NOT NULL,
    buckets   TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, metric, attrs, minute, source)
);
CREATE INDEX IF NOT EXISTS metric_samples_by_minute ON metric_samples (tenant_id, minute);
