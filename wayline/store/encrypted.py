"""Encryption at rest: every payload sealed (AES-256-GCM) before it leaves the process.
``pip install 'wayline[crypto]'``; open a store with ``wayline.connect(url, keys=...)``.

Sealing happens inside the store's one payload path (``wayline.store.payloads``), which
every payload-carrying method uses, so no method can skip it. A store opened with keys
records that it is encrypted; opened without keys later, it is refused.

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
from typing import Protocol

from wayline.errors import CodecError, StoreError

__all__ = ["AESGCMSealer", "KeyProvider", "StaticKeys"]

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


class AESGCMSealer:
    """The ``Sealer`` of an encrypted store (``wayline.store.payloads``): AES-256-GCM with a
    fresh nonce per payload, the key id in the header, and the tenant and row context as
    associated data."""

    encrypted = True

    def __init__(self, keys: KeyProvider) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise StoreError(
                "encryption needs cryptography: pip install 'wayline[crypto]'"
            ) from exc
        self._aead = AESGCM
        self.keys = keys

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
        if not data.startswith(_MAGIC) or len(data) < 5 or len(data) < 17 + data[4]:
            raise CodecError("a payload in this store is not sealed: it was written unencrypted")
        n = data[4]
        try:
            key_id = data[5 : 5 + n].decode()
        except UnicodeDecodeError:
            raise CodecError("a sealed payload has a corrupt header") from None
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
