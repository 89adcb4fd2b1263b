-- 0020: a run row found by its key is found by the primary key, whatever the statistics.
-- runs_by_status (tenant_id, status) and runs_by_subject (tenant_id, subject) led with the
-- tenant as the key does: on a young table that ANALYZE saw empty, a tenant looks rare and
-- either index seemed as good as the key for a lookup by (tenant_id, run_id), so PostgreSQL
-- ran the fences on runs_by_subject with the tenant as their only condition, reading every
-- run of the tenant (issue 31). runs_by_subject now holds only the runs that name a subject
-- (all a lookup by subject wants); runs_by_status goes (retention's scan of a tenant's
-- settled runs reads them by the key, and most of a tenant's runs are settled).
DROP INDEX IF EXISTS runs_by_status;
DROP INDEX IF EXISTS runs_by_subject;
CREATE INDEX IF NOT EXISTS runs_by_subject ON runs (tenant_id, subject) WHERE subject IS NOT NULL;
