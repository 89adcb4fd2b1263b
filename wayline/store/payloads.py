"""The one path every stored payload takes, in and out of a store.

On the way in a payload is sealed (when the store is encrypted) and given a checksum over
its identity and stored bytes; on the way out the checksum is verified before the payload
is opened. Both happen here and only here: a store method that carries a payload calls
``Payloads.put`` / ``Payloads.get``, so a new method cannot skip encryption or the check,
and no wrapper forwards calls it does not know.

The checksum is CRC-32 (zlib, ~1 GB/s: a step's payload costs microseconds), over the
table, the row's identity (tenant, run, step, ...) and the bytes as stored. It catches a
flipped byte, a truncated value and a row copied to another run or step; it is not a MAC
(whoever can write the database can recompute it: encryption's AES-GCM tag covers that).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from wayline.errors import CorruptionError

__all__ = ["PLAINTEXT", "Ident", "Payloads", "Sealer", "checksum", "json_column"]

T = TypeVar("T")

Ident = Sequence[Any]
"""A row's identity: the table first, then its key columns (tenant, run, step, ...)."""


class Sealer(Protocol):
    """Encryption of payloads: plaintext, or AES-GCM under keys the store never holds."""

    encrypted: bool

    def seal(self, tenant_id: str, aad: str, data: bytes) -> bytes: ...

    def open(self, tenant_id: str, aad: str, data: bytes) -> bytes: ...


class _Plaintext:
    encrypted = False

    def seal(self, tenant_id: str, aad: str, data: bytes) -> bytes:
        return data

    def open(self, tenant_id: str, aad: str, data: bytes) -> bytes:
        return data


PLAINTEXT: Sealer = _Plaintext()


def json_column(ident: Ident, stored: str, what: str, shape: Callable[[Any], T]) -> T:
    """A JSON column beside a row's payloads (next nodes, byte counts, approvers, API
    metadata), read into ``shape``. These carry no checksum, so one that cannot be read,
    or has the wrong shape, is the row's corruption: ``CorruptionError`` naming the row
    and ``what`` of it failed, never a bare JSON error."""
    try:
        if stored == "[]" or stored == "{}":  # most rows' (a run's next nodes when it ended,
            return shape([] if stored == "[]" else {})  # its classes): no parse for them
        return shape(json.loads(stored))
    except (ValueError, TypeError) as exc:
        raise CorruptionError.of(ident, f"{what} cannot be read: {exc}") from None


def checksum(ident: Ident, data: bytes) -> int:
    """CRC-32 of a row's identity and its stored bytes."""
    head = "\x1f".join(map(str, ident)).encode()
    return zlib.crc32(data, zlib.crc32(head))


class Payloads:
    """Seal-and-checksum on write, verify-and-open on read, for one store."""

    def __init__(self, sealer: Sealer = PLAINTEXT) -> None:
        self.sealer = sealer

    def put(self, ident: Ident, tenant_id: str, aad: str, data: bytes) -> tuple[bytes, int]:
        """The bytes to store and their checksum."""
        stored = self.sealer.seal(tenant_id, aad, data)
        return stored, checksum(ident, stored)

    def put_opt(
        self, ident: Ident, tenant_id: str, aad: str, data: bytes | None
    ) -> tuple[bytes | None, int | None]:
        return (None, None) if data is None else self.put(ident, tenant_id, aad, data)

    def get(self, ident: Ident, tenant_id: str, aad: str, stored: Any, crc: int | None) -> bytes:
        """The payload as written, or ``CorruptionError`` naming the row."""
        data = bytes(stored)
        if crc is not None and checksum(ident, data) != int(crc):
            raise CorruptionError.of(ident, "its checksum does not match its bytes")
        return self.sealer.open(tenant_id, aad, data)

    def get_opt(
        self, ident: Ident, tenant_id: str, aad: str, stored: Any, crc: int | None
    ) -> bytes | None:
        return None if stored is None else self.get(ident, tenant_id, aad, stored, crc)
