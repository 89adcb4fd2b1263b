"""Named queries of the assistants made over the API (``assistants``, one row each: the
version in use; ``assistant_versions``, every version), with ``?`` placeholders. Every
query names the tenant."""

Q_INSERT_ASSISTANT = """
INSERT INTO assistants (tenant_id, assistant_id, graph_id, version, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
"""
_VERSION_COLUMNS = (
    "tenant_id, assistant_id, version, graph_id, name, description, config, context, "
    "metadata, created_at"
)
Q_INSERT_VERSION = f"""
INSERT INTO assistant_versions ({_VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_CURRENT = """
SELECT a.tenant_id, a.assistant_id, a.version, v.graph_id, v.name, v.description, v.config,
       v.context, v.metadata, a.created_at, a.updated_at
FROM assistants a JOIN assistant_versions v
  ON v.tenant_id = a.tenant_id AND v.assistant_id = a.assistant_id AND v.version = a.version
"""
Q_GET_ASSISTANT = f"{_CURRENT} WHERE a.tenant_id = ? AND a.assistant_id = ?"
Q_LIST_ASSISTANTS = f"{_CURRENT} WHERE a.tenant_id = ? ORDER BY a.created_at DESC"
Q_MAX_VERSION = """
SELECT COALESCE(MAX(version), 0) FROM assistant_versions WHERE tenant_id = ? AND assistant_id = ?
"""
Q_SET_VERSION = """
UPDATE assistants SET version = ?, graph_id = ?, updated_at = ?
WHERE tenant_id = ? AND assistant_id = ?
"""
Q_GET_VERSION = f"""
SELECT {_VERSION_COLUMNS} FROM assistant_versions
WHERE tenant_id = ? AND assistant_id = ? AND version = ?
"""
Q_LIST_VERSIONS = f"""
SELECT {_VERSION_COLUMNS} FROM assistant_versions WHERE tenant_id = ? AND assistant_id = ?
ORDER BY version DESC
"""
Q_DELETE_ASSISTANT = "DELETE FROM assistants WHERE tenant_id = ? AND assistant_id = ?"
Q_DELETE_VERSIONS = "DELETE FROM assistant_versions WHERE tenant_id = ? AND assistant_id = ?"
