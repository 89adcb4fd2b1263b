-- 0022: an effect found by its key is found by the primary key, whatever the statistics.
-- effects_by_run (tenant_id, run_id) led with the tenant as the key (tenant_id, effect_key)
-- does: on a young table that ANALYZE saw empty both looked as cheap, and PostgreSQL ran
-- Q_GET_EFFECT and Q_UPDATE_EFFECT on effects_by_run with the tenant as their only index
-- condition, reading every effect of the tenant (issue 31). Led by the run id alone it
-- serves a run's effects (listing, erasure) and cannot serve a lookup by key (PostgreSQL
-- 18's skip scan would still take a (run_id, tenant_id) index for one).
DROP INDEX IF EXISTS effects_by_run;
CREATE INDEX IF NOT EXISTS effects_by_run ON effects (run_id);
