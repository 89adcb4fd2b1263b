-- Row-level security (wayline db upgrade --rls): every run table answers only for the tenant
-- named by the transaction setting wayline.tenant, which a store opened with ?rls=1 sets.
-- An unset tenant sees nothing. Roles with BYPASSRLS (or the tables' owner) are not bound:
-- give applications and tenant-scoped workers a role without it.
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON runs;
CREATE POLICY wayline_tenant ON runs USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE deltas ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON deltas;
CREATE POLICY wayline_tenant ON deltas USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE snapshots ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON snapshots;
CREATE POLICY wayline_tenant ON snapshots USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE segments ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON segments;
CREATE POLICY wayline_tenant ON segments USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE pending_writes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON pending_writes;
CREATE POLICY wayline_tenant ON pending_writes USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE interrupts ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON interrupts;
CREATE POLICY wayline_tenant ON interrupts USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE effects ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON effects;
CREATE POLICY wayline_tenant ON effects USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE audit ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON audit;
CREATE POLICY wayline_tenant ON audit USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE meter ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON meter;
CREATE POLICY wayline_tenant ON meter USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE blobs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON blobs;
CREATE POLICY wayline_tenant ON blobs USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE blob_refs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON blob_refs;
CREATE POLICY wayline_tenant ON blob_refs USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE subject_keys ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON subject_keys;
CREATE POLICY wayline_tenant ON subject_keys USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE lg_checkpoints ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON lg_checkpoints;
CREATE POLICY wayline_tenant ON lg_checkpoints USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE lg_values ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON lg_values;
CREATE POLICY wayline_tenant ON lg_values USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE lg_writes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON lg_writes;
CREATE POLICY wayline_tenant ON lg_writes USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE stream_events ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON stream_events;
CREATE POLICY wayline_tenant ON stream_events USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE memory_items ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON memory_items;
CREATE POLICY wayline_tenant ON memory_items USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE memory_history ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON memory_history;
CREATE POLICY wayline_tenant ON memory_history USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE memory_vectors ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON memory_vectors;
CREATE POLICY wayline_tenant ON memory_vectors USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE threads ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON threads;
CREATE POLICY wayline_tenant ON threads USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE thread_runs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON thread_runs;
CREATE POLICY wayline_tenant ON thread_runs USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON api_keys;
CREATE POLICY wayline_tenant ON api_keys USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
-- A request's key is looked up before its tenant is known: this one function, owned by the
-- tables' owner (who bypasses the policies), returns the one row of one key id and nothing
-- else; a tenant-scoped role may call it but still reads no other tenant's keys by SELECT.
CREATE OR REPLACE FUNCTION wayline_find_key(wanted TEXT) RETURNS SETOF api_keys
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
    AS 'SELECT * FROM api_keys WHERE key_id = wanted';
ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON schedules;
CREATE POLICY wayline_tenant ON schedules USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE assistants ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON assistants;
CREATE POLICY wayline_tenant ON assistants USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE assistant_versions ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON assistant_versions;
CREATE POLICY wayline_tenant ON assistant_versions USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE metric_samples ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON metric_samples;
CREATE POLICY wayline_tenant ON metric_samples USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
ALTER TABLE run_queue ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS wayline_tenant ON run_queue;
CREATE POLICY wayline_tenant ON run_queue USING (tenant_id = current_setting('wayline.tenant', true))
    WITH CHECK (tenant_id = current_setting('wayline.tenant', true));
