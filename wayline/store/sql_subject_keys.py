"""The store's half of crypto-shredding (``wayline.store.subject_keys``): data keys per
(tenant, subject, class), created on first use, kept wrapped by the tenant key through the
store's sealer, and destroyed by erasure. Only an encrypted store has them: a plaintext
store returns None and values are stored as they are (erasure then rewrites rows, and
SQLite's secure_delete and WAL truncation remove the old bytes from its files)."""

from __future__ import annotations

import time
from collections.abc import Collection
from contextlib import AbstractContextManager
from typing import Any, Protocol

from wayline.store.payloads import Payloads
from wayline.store.subject_keys import SubjectVault, new_key, subject_digest

__all__ = ["SubjectKeysContract", "SubjectKeysMixin"]

Q_FIND = (
    "SELECT key_id, wrapped, erased_at FROM subject_keys "
    "WHERE tenant_id = ? AND subject_digest = ? AND cls = ?"
)
Q_INSERT = """
INSERT INTO subject_keys (tenant_id, key_id, subject_digest, cls, wrapped, created_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, subject_digest, cls) DO NOTHING
"""
Q_GET = "SELECT wrapped, erased_at FROM subject_keys WHERE tenant_id = ? AND key_id = ?"
Q_ERASE = """
UPDATE subject_keys SET wrapped = NULL, erased_at = ?
WHERE tenant_id = ? AND subject_digest = ? AND wrapped IS NOT NULL
"""
Q_ERASE_CLASS = Q_ERASE.strip() + " AND cls = ?"


class SubjectKeysContract(Protocol):
    """Per-subject data keys of an encrypted store (crypto-shredding)."""

    def subject_key(self, tenant_id: str, subject: str, cls: str) -> tuple[str, bytes] | None:
        """(key id, data key) of a subject's class, made on first use; None on a plaintext
        store or once erased (``wayline.store.subject_keys``)."""
        ...

    def data_key(self, tenant_id: str, key_id: str) -> bytes | float | None:
        """A data key by id; the time it was erased (float); None if unknown."""
        ...

    def destroy_subject_keys(
        self, tenant_id: str, subject: str, classes: Collection[str] | None = None
    ) -> int:
        """Destroy a subject's data keys (of ``classes`` or all); returns how many."""
        ...


class SubjectKeysMixin:
    placeholder: str
    payloads: Payloads
    vault: SubjectVault | None = None
    """Where subject keys live when not in the table (the key provider, if it is one)."""

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self, query: str, params: Any, tenant: str | None = None) -> list[Any]:
        raise NotImplementedError

    def _p(self, query: str) -> str:
        return query.replace("?", self.placeholder)

    def subject_key(self, tenant_id: str, subject: str, cls: str) -> tuple[str, bytes] | None:
        """The data key of a subject's class (made on first use); None on a plaintext
        store, or when the class was erased for the subject (new values then go in clear,
        to be redacted like any other: a destroyed key is never silently re-made)."""
        if not self.payloads.sealer.encrypted:
            return None
        digest = subject_digest(subject)
        if self.vault is not None:
            return self.vault.subject_key(tenant_id, digest, cls)
        with self._tx(tenant_id) as db:
            row = db.execute(self._p(Q_FIND), (tenant_id, digest, cls)).fetchone()
            if row is None:
                key_id, dek = new_key()
                wrapped = self.payloads.sealer.seal(tenant_id, f"k|{key_id}", dek)
                params = (tenant_id, key_id, digest, cls, wrapped, time.time())
                db.execute(self._p(Q_INSERT), params)
                row = db.execute(self._p(Q_FIND), (tenant_id, digest, cls)).fetchone()
        key_id, wrapped, _erased = row
        if wrapped is None:
            return None
        return key_id, self.payloads.sealer.open(tenant_id, f"k|{key_id}", bytes(wrapped))

    def data_key(self, tenant_id: str, key_id: str) -> bytes | float | None:
        if self.vault is not None:
            return self.vault.data_key(tenant_id, key_id)
        rows = self._read(self._p(Q_GET), (tenant_id, key_id), tenant=tenant_id)
        if not rows:
            return None
        wrapped, erased_at = rows[0]
        if wrapped is None:
            return float(erased_at)
        return self.payloads.sealer.open(tenant_id, f"k|{key_id}", bytes(wrapped))

    def destroy_subject_keys(
        self, tenant_id: str, subject: str, classes: Collection[str] | None = None
    ) -> int:
        """Destroy the subject's data keys (of ``classes``, or all): crypto-shredding."""
        digest, now = subject_digest(subject), time.time()
        if self.vault is not None:
            return self.vault.destroy_subject_keys(tenant_id, digest, classes)
        with self._tx(tenant_id) as db:
            if classes is None:
                return int(db.execute(self._p(Q_ERASE), (now, tenant_id, digest)).rowcount)
            return sum(
                int(db.execute(self._p(Q_ERASE_CLASS), (now, tenant_id, digest, c)).rowcount)
                for c in classes
            )
