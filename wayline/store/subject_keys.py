"""Crypto-shredding: classified values sealed under a data key per (tenant, subject, class).

On an encrypted store, each value of a classified channel of a run that names a data
subject is sealed (AES-256-GCM) under that subject's key for that class before it goes
into its row (delta, pending write, snapshot, segment, blob); the row is then sealed again
under the tenant key like every payload. The data key is stored wrapped (sealed) by the
tenant key in ``subject_keys``. Erasing the subject's class sets the wrapped key to NULL:
every copy of those values — rows rewritten since, pages in the WAL or on the free list,
a dead PostgreSQL tuple, a dump of the data tables — is then ciphertext under a key that no
longer exists. A value whose key was erased reads as ``Redacted(cls, erased_at)``.

What the table does not reach: a backup that holds ``subject_keys`` as it was before the
erasure holds the wrapped key too, and opens with the tenant key. To reach backups, keep
the subject keys outside the database: a key provider that is also a ``SubjectVault``
(a KMS, or ``MemoryVault`` as the model) holds them instead of the table, and destroying
them there makes every copy of the database unreadable for that subject's classes.

Format of a sealed value: ``WLS1 | len(key_id) | key_id | len(cls) | cls | nonce(12) |
ciphertext+tag``; the associated data is ``tenant|key_id|cls``.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Collection, Mapping
from typing import Any, Protocol, runtime_checkable

from wayline.classes import DEFAULT_CLASS, Redacted
from wayline.errors import CodecError

__all__ = [
    "MAGIC",
    "MemoryVault",
    "SubjectSeal",
    "SubjectUnseal",
    "SubjectVault",
    "is_sealed",
    "subject_digest",
]

MAGIC = b"WLS1"


def subject_digest(subject: str) -> str:
    """What the store keeps of a subject's id in its key table and receipts."""
    return "sha256:" + hashlib.sha256(subject.encode()).hexdigest()


def is_sealed(data: bytes) -> bool:
    return data[:4] == MAGIC


class KeySource(Protocol):
    """The store side: data keys by id, created on first use, wrapped by the tenant key."""

    def subject_key(self, tenant_id: str, subject: str, cls: str) -> tuple[str, bytes] | None: ...

    def data_key(self, tenant_id: str, key_id: str) -> bytes | float | None:
        """The key; the time it was erased (float); None when the store has no such key."""
        ...


@runtime_checkable
class SubjectVault(Protocol):
    """Subject data keys kept outside the database (give it as, or with, the key provider:
    ``wayline.connect(url, keys=provider)`` where the provider implements these too)."""

    def subject_key(self, tenant_id: str, digest: str, cls: str) -> tuple[str, bytes] | None:
        """(key id, key) of the subject's class, made on first use; None once destroyed."""
        ...

    def data_key(self, tenant_id: str, key_id: str) -> bytes | float | None:
        """The key; when it was destroyed (float); None if never known."""
        ...

    def destroy_subject_keys(
        self, tenant_id: str, digest: str, classes: Collection[str] | None
    ) -> int: ...


class MemoryVault:
    """A ``SubjectVault`` in memory: the model for one backed by a KMS, and for tests."""

    def __init__(self) -> None:
        self.vault_ids: dict[tuple[str, str, str], str] = {}
        self.vault_keys: dict[tuple[str, str], bytes | float] = {}

    def subject_key(self, tenant_id: str, digest: str, cls: str) -> tuple[str, bytes] | None:
        key_id = self.vault_ids.get((tenant_id, digest, cls))
        if key_id is None:
            key_id, key = new_key()
            self.vault_ids[tenant_id, digest, cls] = key_id
            self.vault_keys[tenant_id, key_id] = key
        found = self.vault_keys[tenant_id, key_id]
        return None if isinstance(found, float) else (key_id, found)

    def data_key(self, tenant_id: str, key_id: str) -> bytes | float | None:
        return self.vault_keys.get((tenant_id, key_id))

    def destroy_subject_keys(
        self, tenant_id: str, digest: str, classes: Collection[str] | None
    ) -> int:
        now, n = time.time(), 0
        for (t, d, cls), key_id in self.vault_ids.items():
            mine = t == tenant_id and d == digest and (classes is None or cls in classes)
            if mine and not isinstance(self.vault_keys[t, key_id], float):
                self.vault_keys[t, key_id] = now
                n += 1
        return n


def _aead(key: bytes) -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def new_key() -> tuple[str, bytes]:
    return uuid.uuid4().hex, os.urandom(32)


class SubjectSeal:
    """Seals the values of classified keys of one run under its subject's class keys."""

    def __init__(
        self, store: KeySource, tenant_id: str, subject: str, classes: Mapping[str, str]
    ) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.subject = subject
        self.classes = classes
        self.keys: dict[str, tuple[str, bytes] | None] = {}

    def seal(self, key: str, data: bytes) -> bytes:
        cls = self.classes.get(key, DEFAULT_CLASS)
        if cls == DEFAULT_CLASS:
            return data
        if cls not in self.keys:  # one look-up per class and run (None: plaintext store)
            self.keys[cls] = self.store.subject_key(self.tenant_id, self.subject, cls)
        found = self.keys[cls]
        if found is None:
            return data
        key_id, dek = found
        kid, c = key_id.encode(), cls.encode()
        nonce = os.urandom(12)
        sealed: bytes = _aead(dek).encrypt(nonce, data, f"{self.tenant_id}|{key_id}|{cls}".encode())
        return MAGIC + bytes([len(kid)]) + kid + bytes([len(c)]) + c + nonce + sealed


class SubjectUnseal:
    """Opens values sealed under subject keys; an erased key gives the tombstone."""

    def __init__(self, store: KeySource, tenant_id: str) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.keys: dict[str, bytes | float | None] = {}

    def open(self, data: bytes) -> bytes | Redacted:
        try:
            n = data[4]
            key_id = data[5 : 5 + n].decode()
            m = data[5 + n]
            cls = data[6 + n : 6 + n + m].decode()
            nonce, sealed = data[6 + n + m : 18 + n + m], data[18 + n + m :]
        except (IndexError, UnicodeDecodeError):
            raise CodecError("a value sealed under a subject key has a damaged header") from None
        if key_id not in self.keys:
            self.keys[key_id] = self.store.data_key(self.tenant_id, key_id)
        dek = self.keys[key_id]
        if isinstance(dek, float):
            return Redacted(cls, dek)
        if dek is None:
            raise CodecError(
                f"a value is sealed under subject key {key_id!r}, which this store does not "
                "hold (a row copied from another store?)"
            )
        try:
            aad = f"{self.tenant_id}|{key_id}|{cls}".encode()
            return bytes(_aead(dek).decrypt(nonce, sealed, aad))
        except Exception as exc:  # InvalidTag
            raise CodecError(
                f"a subject-sealed value does not open ({type(exc).__name__})"
            ) from None
