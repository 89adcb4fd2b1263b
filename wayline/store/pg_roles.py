"""PostgreSQL roles matching the client's scopes (``wayline db grant ROLE --scope S``).

The client and the CLI check scopes in the process; these grants make the database refuse
the same things to a role, whatever client it uses. Combined with row-level security
(``wayline db upgrade --rls`` and ``?rls=1&tenant=T`` URLs, roles without BYPASSRLS) a
role is confined to one tenant *and* one scope:

- ``read``: SELECT on every table. It can read state, history, audit and exports; it
  cannot write a row, so it cannot start, claim, resume, approve or erase.
- ``execute``: also what running and steering runs writes: INSERT and UPDATE on runs,
  deltas, snapshots, pending writes, interrupts and effects; INSERT only on segments,
  blobs, blob references, the meter, the audit log (append-only for it) and subject keys;
  DELETE only on pending writes and interrupts (a commit clears them). It cannot purge,
  redact (rewriting a segment or blob is refused), erase a subject key or edit the audit.
- ``admin``: everything, on every table (purge, erasure, retention, migrations).
"""

from __future__ import annotations

from wayline.errors import ConfigError

__all__ = ["grants"]

_EXEC_UPDATE = ("runs", "deltas", "snapshots", "pending_writes", "interrupts", "effects")
_EXEC_INSERT = ("segments", "blobs", "blob_refs", "meter", "audit", "subject_keys")
_EXEC_DELETE = ("pending_writes", "interrupts")
_EXEC_MEMORY = ("memory_items", "memory_history", "memory_vectors")
"""Long-term memory: a node's puts and deletes commit with its step (``wayline.memory``)."""
_EXEC_METRICS = ("metric_samples",)
"""A worker flushes its metrics a minute a row and deletes those past retention."""


def grants(scope: str, role: str, schema: str) -> list[str]:
    """The GRANT statements giving ``role`` the ``scope`` on ``schema``'s tables (both
    names already checked as identifiers by the caller)."""
    if scope not in ("read", "execute", "admin"):  # the scopes of wayline.control.scopes
        raise ConfigError(f"scope {scope!r} must be one of read, execute, admin")
    out = [
        f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"',
        f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"',
    ]
    if scope == "admin":
        out.append(f'GRANT ALL ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        out.append(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}"')
    elif scope == "execute":
        out += [f'GRANT INSERT, UPDATE ON "{schema}".{t} TO "{role}"' for t in _EXEC_UPDATE]
        out += [f'GRANT INSERT ON "{schema}".{t} TO "{role}"' for t in _EXEC_INSERT]
        out += [f'GRANT DELETE ON "{schema}".{t} TO "{role}"' for t in _EXEC_DELETE]
        out += [f'GRANT INSERT, UPDATE, DELETE ON "{schema}".{t} TO "{role}"' for t in _EXEC_MEMORY]
        out += [
            f'GRANT INSERT, UPDATE, DELETE ON "{schema}".{t} TO "{role}"' for t in _EXEC_METRICS
        ]
        out.append(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}"')
    return out
