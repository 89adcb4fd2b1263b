"""Assistants made over the API (``wayline serve``): a named configuration of a served
graph, versioned. A change writes a new version and points the assistant at it; an older
version can be made the one in use again. The served graphs themselves are the default
assistants and are not stored (``wayline.server.registry``).

Like the other server tables these hold no run payload, only what a client sent as an
assistant's ``config``, ``context`` and ``metadata`` (JSON columns, named when unreadable).
"""

from __future__ import annotations

import dataclasses
import json
import time
from types import SimpleNamespace
from typing import Any

from wayline.store.payloads import json_column
from wayline.store.sql import assistant_queries
from wayline.store.sql_store import SQLStore

__all__ = ["AssistantRecord", "AssistantTables"]


@dataclasses.dataclass(frozen=True, slots=True)
class AssistantRecord:
    """One version of an assistant (``updated_at``: when the assistant last changed; for a
    version read from the history, when the version was made)."""

    tenant_id: str
    assistant_id: str
    version: int
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AssistantRecord:
        ident = ("assistant_versions", row["tenant_id"], row["assistant_id"])

        def obj(name: str) -> dict[str, Any]:
            return json_column(ident, row[name], f"the assistant's {name}", dict)

        return cls(
            tenant_id=row["tenant_id"],
            assistant_id=row["assistant_id"],
            version=int(row["version"]),
            graph_id=row["graph_id"],
            name=row["name"],
            description=row["description"],
            config=obj("config"),
            context=obj("context"),
            metadata=obj("metadata"),
            created_at=float(row["created_at"]),
            updated_at=float(row.get("updated_at") or row["created_at"]),
        )


class AssistantTables:
    def __init__(self, store: SQLStore) -> None:
        self.store = store
        ph = store.placeholder
        names = {k: v for k, v in vars(assistant_queries).items() if k.startswith("Q_")}
        self.q = SimpleNamespace(**{k: v.replace("?", ph) for k, v in names.items()})

    def _rows(self, query: str, params: tuple[Any, ...], tenant: str) -> list[dict[str, Any]]:
        backend: Any = self.store
        rows: list[dict[str, Any]] = backend._read_dicts(query, params, tenant)
        return rows

    def create(self, record: AssistantRecord) -> bool:
        """Store a new assistant at version 1; False when its id is taken."""
        r = record
        with self.store._tx(r.tenant_id) as db:
            params = (r.tenant_id, r.assistant_id, r.graph_id, 1, r.created_at, r.created_at)
            if not db.execute(self.q.Q_INSERT_ASSISTANT, params).rowcount:
                return False
            db.execute(self.q.Q_INSERT_VERSION, _version_row(r, 1))
        return True

    def get(self, tenant_id: str, assistant_id: str) -> AssistantRecord | None:
        rows = self._rows(self.q.Q_GET_ASSISTANT, (tenant_id, assistant_id), tenant_id)
        return AssistantRecord.from_row(rows[0]) if rows else None

    def all(self, tenant_id: str) -> list[AssistantRecord]:
        """The tenant's assistants, newest first."""
        rows = self._rows(self.q.Q_LIST_ASSISTANTS, (tenant_id,), tenant_id)
        return [AssistantRecord.from_row(r) for r in rows]

    def versions(self, tenant_id: str, assistant_id: str) -> list[AssistantRecord]:
        """Every version, newest first."""
        rows = self._rows(self.q.Q_LIST_VERSIONS, (tenant_id, assistant_id), tenant_id)
        return [AssistantRecord.from_row(r) for r in rows]

    def add_version(self, record: AssistantRecord) -> int:
        """Store ``record`` as the assistant's next version and point it there."""
        r = record
        now = time.time()
        with self.store._tx(r.tenant_id) as db:
            (last,) = db.execute(self.q.Q_MAX_VERSION, (r.tenant_id, r.assistant_id)).fetchone()
            version = int(last) + 1
            db.execute(self.q.Q_INSERT_VERSION, _version_row(r, version, now))
            db.execute(
                self.q.Q_SET_VERSION, (version, r.graph_id, now, r.tenant_id, r.assistant_id)
            )
        return version

    def set_version(self, tenant_id: str, assistant_id: str, version: int) -> bool:
        """Point the assistant at an existing ``version``; False when there is none."""
        with self.store._tx(tenant_id) as db:
            found = db.execute(self.q.Q_GET_VERSION, (tenant_id, assistant_id, version)).fetchone()
            if found is None:
                return False
            graph_id = found[3]
            params = (version, graph_id, time.time(), tenant_id, assistant_id)
            return bool(db.execute(self.q.Q_SET_VERSION, params).rowcount)

    def delete(self, tenant_id: str, assistant_id: str) -> bool:
        with self.store._tx(tenant_id) as db:
            db.execute(self.q.Q_DELETE_VERSIONS, (tenant_id, assistant_id))
            return bool(db.execute(self.q.Q_DELETE_ASSISTANT, (tenant_id, assistant_id)).rowcount)


def _version_row(r: AssistantRecord, version: int, at: float | None = None) -> tuple[Any, ...]:
    return (
        r.tenant_id,
        r.assistant_id,
        version,
        r.graph_id,
        r.name,
        r.description,
        json.dumps(r.config),
        json.dumps(r.context),
        json.dumps(r.metadata),
        r.created_at if at is None else at,
    )
