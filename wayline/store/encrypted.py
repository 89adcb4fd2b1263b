"""Encryption at rest: any store, with every payload sealed (AES-256-GCM) before it leaves
the process. ``pip install 'wayline[crypto]'``.

Keys come from a ``KeyProvider`` the database never sees, one keyring per tenant. Each
sealed payload carries the id of the key that sealed it, so rotating a tenant's current key
affects new writes only and old rows stay readable while their key is provided. The
associated data binds a ciphertext to its tenant and run (or blob digest, or effect key):
a row copied elsewhere does not decrypt.

Sealed: deltas, pending writes, snapshots, segments, blobs, interrupt proposals and answers,
effect results, run inboxes. Not sealed: ids, statuses, digests, timestamps, the meter, the
audit log. Blob digests are of the plaintext, so equal large values within one tenant are
still recognisable as equal, and a blob shared by content keeps the key it was first sealed
with: retire a key only after re-sealing what it sealed (not automated yet). The meter
counts the sealed bytes (what is stored); the sealing overhead (~45 bytes a payload) shows
as framing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, Protocol

from wayline.errors import CodecError, StoreError
from wayline.store.base import Store
from wayline.store.records import (
    AuditRecord,
    CommitBatch,
    DeltaRecord,
    EffectRecord,
    EffectStatus,
    InterruptRecord,
    PendingWriteRecord,
    RunRecord,
)

__all__ = ["EncryptedStore", "KeyProvider", "StaticKeys"]

_MAGIC = b"WLE1"


class KeyProvider(Protocol):
    """Where keys come from (a KMS, a vault, the environment): never the store."""

    def current(self, tenant_id: str) -> tuple[str, bytes]:
        """The (key id, 32-byte key) new writes of this tenant are sealed with."""
        ...

    def key(self, tenant_id: str, key_id: str) -> bytes:
        """The key with this id (KeyError if it is not available)."""
        ...


@dataclasses.dataclass(frozen=True)
class StaticKeys:
    """Keys held in memory: ``{tenant: {key_id: key}}`` and each tenant's current key id."""

    keys: Mapping[str, Mapping[str, bytes]]
    current_ids: Mapping[str, str]

    def current(self, tenant_id: str) -> tuple[str, bytes]:
        key_id = self.current_ids[tenant_id]
        return key_id, self.keys[tenant_id][key_id]

    def key(self, tenant_id: str, key_id: str) -> bytes:
        return self.keys[tenant_id][key_id]


class EncryptedStore:
    """Wraps a store; everything not listed here passes through unchanged."""

    def __init__(self, inner: Store, keys: KeyProvider) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise StoreError(
                "encryption needs cryptography: pip install 'wayline[crypto]'"
            ) from exc
        self._aead = AESGCM
        self.inner = inner
        self.keys = keys
        self.url = inner.url

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # -- sealing ----------------------------------------------------------------------

    def seal(self, tenant_id: str, aad: str, data: bytes) -> bytes:
        try:
            key_id, key = self.keys.current(tenant_id)
        except KeyError:
            raise CodecError(f"no current encryption key for tenant {tenant_id!r}") from None
        nonce = os.urandom(12)
        kid = key_id.encode()
        sealed = self._aead(key).encrypt(nonce, data, f"{tenant_id}|{aad}".encode())
        return _MAGIC + bytes([len(kid)]) + kid + nonce + sealed

    def open(self, tenant_id: str, aad: str, data: bytes) -> bytes:
        if not data.startswith(_MAGIC):
            raise CodecError("a payload in this store is not sealed: it was written unencrypted")
        n = data[4]
        key_id = data[5 : 5 + n].decode()
        nonce, sealed = data[5 + n : 17 + n], data[17 + n :]
        try:
            key = self.keys.key(tenant_id, key_id)
        except KeyError:
            raise CodecError(
                f"payload sealed with key {key_id!r}, which the key provider does not have "
                f"for tenant {tenant_id!r}"
            ) from None
        try:
            return bytes(self._aead(key).decrypt(nonce, sealed, f"{tenant_id}|{aad}".encode()))
        except Exception as exc:  # InvalidTag: wrong key, or a row moved from elsewhere
            raise CodecError(f"a sealed payload does not open ({type(exc).__name__})") from None

    def _maybe(self, fn: Any, tenant: str, aad: str, data: bytes | None) -> bytes | None:
        return None if data is None else fn(tenant, aad, data)

    # -- writes -----------------------------------------------------------------------

    def commit(self, tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        t, r = tenant_id, run_id
        sealed = dataclasses.replace(
            batch,
            deltas=[_re(d, payload=self.seal(t, f"{r}|d", d.payload)) for d in batch.deltas],
            snapshots=[_re(s, payload=self.seal(t, f"{r}|s", s.payload)) for s in batch.snapshots],
            segments=[_re(s, payload=self.seal(t, f"{r}|g", s.payload)) for s in batch.segments],
            blobs=[_re(b, payload=self.seal(t, f"b|{b.digest}", b.payload)) for b in batch.blobs],
            pending=[_re(p, payload=self.seal(t, f"{r}|p", p.payload)) for p in batch.pending],
            interrupts=[self._seal_interrupt(t, r, i) for i in batch.interrupts],
        )
        self.inner.commit(tenant_id, run_id, token, sealed)

    def _seal_interrupt(self, t: str, r: str, i: InterruptRecord) -> InterruptRecord:
        return _re(
            i,
            value=self.seal(t, f"{r}|i", i.value),
            resume=self._maybe(self.seal, t, f"{r}|i", i.resume),
        )

    def answer_interrupt(
        self, tenant_id: str, run_id: str, interrupt_id: str, resume: bytes, audit: AuditRecord
    ) -> bool:
        sealed = self.seal(tenant_id, f"{run_id}|i", resume)
        return self.inner.answer_interrupt(tenant_id, run_id, interrupt_id, sealed, audit)

    def put_effect(
        self, run_id: str, token: int | None, record: EffectRecord, *, expect: EffectStatus | None
    ) -> bool:
        t = record.tenant_id
        result = self._maybe(self.seal, t, f"e|{record.key}", record.result)
        return self.inner.put_effect(run_id, token, _re(record, result=result), expect=expect)

    def enqueue(self, tenant_id: str, run_id: str, inbox: bytes, **kw: Any) -> RunRecord:
        run = self.inner.enqueue(
            tenant_id, run_id, self.seal(tenant_id, f"{run_id}|n", inbox), **kw
        )
        return self._open_run(run)

    # -- reads ------------------------------------------------------------------------

    def _open_run(self, run: RunRecord | None) -> Any:
        if run is None or run.inbox is None:
            return run
        return _re(run, inbox=self.open(run.tenant_id, f"{run.run_id}|n", run.inbox))

    def get_run(self, tenant_id: str, run_id: str) -> RunRecord | None:
        return self._open_run(self.inner.get_run(tenant_id, run_id))

    def list_runs(self, tenant_id: str, **kw: Any) -> list[RunRecord]:
        return [self._open_run(r) for r in self.inner.list_runs(tenant_id, **kw)]

    def create_run(self, tenant_id: str, run_id: str, **kw: Any) -> RunRecord:
        return self._open_run(self.inner.create_run(tenant_id, run_id, **kw))

    def claim_next(self, **kw: Any) -> tuple[RunRecord, int] | None:
        claimed = self.inner.claim_next(**kw)
        return None if claimed is None else (self._open_run(claimed[0]), claimed[1])

    def load_snapshot(self, tenant_id: str, run_id: str, at_or_before: int) -> Any:
        s = self.inner.load_snapshot(tenant_id, run_id, at_or_before)
        return None if s is None else _re(s, payload=self.open(tenant_id, f"{run_id}|s", s.payload))

    def load_deltas(
        self, tenant_id: str, run_id: str, after: int, through: int
    ) -> list[DeltaRecord]:
        return [
            _re(d, payload=self.open(tenant_id, f"{run_id}|d", d.payload))
            for d in self.inner.load_deltas(tenant_id, run_id, after, through)
        ]

    def load_pending(self, tenant_id: str, run_id: str, step: int) -> list[PendingWriteRecord]:
        return [
            _re(p, payload=self.open(tenant_id, f"{run_id}|p", p.payload))
            for p in self.inner.load_pending(tenant_id, run_id, step)
        ]

    def load_interrupts(self, tenant_id: str, run_id: str, step: int) -> list[InterruptRecord]:
        aad = f"{run_id}|i"
        return [
            _re(
                i,
                value=self.open(tenant_id, aad, i.value),
                resume=self._maybe(self.open, tenant_id, aad, i.resume),
            )
            for i in self.inner.load_interrupts(tenant_id, run_id, step)
        ]

    def load_segments(self, tenant_id: str, run_id: str, seg_ids: list[str]) -> list[bytes]:
        return [
            self.open(tenant_id, f"{run_id}|g", data)
            for data in self.inner.load_segments(tenant_id, run_id, seg_ids)
        ]

    def load_blob(self, tenant_id: str, digest: str) -> bytes:
        return self.open(tenant_id, f"b|{digest}", self.inner.load_blob(tenant_id, digest))

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None:
        rec = self.inner.get_effect(tenant_id, key)
        return None if rec is None else self._open_effect(rec)

    def list_effects(self, tenant_id: str, run_id: str) -> list[EffectRecord]:
        return [self._open_effect(e) for e in self.inner.list_effects(tenant_id, run_id)]

    def _open_effect(self, rec: EffectRecord) -> EffectRecord:
        return _re(rec, result=self._maybe(self.open, rec.tenant_id, f"e|{rec.key}", rec.result))

    def dump_run(self, tenant_id: str, run_id: str) -> dict[str, list[dict[str, Any]]]:
        rows = self.inner.dump_run(tenant_id, run_id)
        t, r = tenant_id, run_id
        openers: dict[str, dict[str, Any]] = {
            "runs": {"inbox": lambda row, v: self.open(t, f"{r}|n", v)},
            "deltas": {"payload": lambda row, v: self.open(t, f"{r}|d", v)},
            "pending_writes": {"payload": lambda row, v: self.open(t, f"{r}|p", v)},
            "snapshots": {"payload": lambda row, v: self.open(t, f"{r}|s", v)},
            "segments": {"payload": lambda row, v: self.open(t, f"{r}|g", v)},
            "interrupts": {
                "value": lambda row, v: self.open(t, f"{r}|i", v),
                "resume": lambda row, v: self.open(t, f"{r}|i", v),
            },
            "effects": {"result": lambda row, v: self.open(t, f"e|{row['effect_key']}", v)},
            "blobs": {"payload": lambda row, v: self.open(t, f"b|{row['digest']}", v)},
        }
        for table, fields in openers.items():
            rows[table] = [
                {
                    k: fields[k](row, bytes(v)) if k in fields and v is not None else v
                    for k, v in row.items()
                }
                for row in rows[table]
            ]
        return rows


def _re(record: Any, **changes: Any) -> Any:
    return dataclasses.replace(record, **changes)
