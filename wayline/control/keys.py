"""API keys: who a request to ``wayline serve`` is, and what it may do.

A key fixes the tenant and the actor of every request made with it, so an approval
decided over HTTP is decided by that actor and no request can reach another tenant's runs.
A key is ``wl_<key id>_<secret>``; the store keeps the key id and a SHA-256 of the whole
key, never the key (a fast hash is enough: the secret is 192 random bits, not a password).

Scopes follow "read is execution" (a reader could continue a run, so reading is its own
scope): ``read`` (look), ``execute`` (start, resume, approve, resolve; implies read),
``admin`` (purge, export, delete; implies both).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence

from wayline.control.approvals import Actor
from wayline.control.scopes import SCOPES, Scope, allows
from wayline.errors import AuthError
from wayline.store.server_tables import ApiKeyRecord, ServerTables

__all__ = ["SCOPES", "Principal", "authenticate", "create_key", "hash_key"]

DEFAULT_SCOPES = ("execute",)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """The caller of a request, as its key says."""

    tenant: str
    actor: str
    roles: tuple[str, ...] = ()
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    key_id: str | None = None

    def allows(self, scope: Scope) -> bool:
        return any(allows(s, scope) for s in self.scopes)

    @property
    def scope(self) -> Scope:
        """The widest scope the key holds: what a client acting for it may do."""
        return next((s for s in reversed(SCOPES) if self.allows(s)), "read")

    def require(self, scope: Scope) -> None:
        if not self.allows(scope):
            raise AuthError(
                f"this key ({self.key_id or 'dev'}) has scopes {list(self.scopes)}; the request "
                f"needs {scope!r}: create a key with --scopes {scope}",
                status=403,
            )

    @property
    def as_actor(self) -> Actor:
        return Actor(id=self.actor, roles=self.roles, tenant=self.tenant)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(
    tables: ServerTables,
    *,
    tenant: str,
    actor: str,
    roles: Sequence[str] = (),
    scopes: Sequence[str] = DEFAULT_SCOPES,
    label: str = "",
) -> tuple[str, ApiKeyRecord]:
    """Make and store a key; returns (the key, shown once, and its record)."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise AuthError(f"scopes must be some of {list(SCOPES)}, got {list(scopes)}", status=400)
    if not tenant or not actor:
        raise AuthError("a key needs a tenant and an actor", status=400)
    key_id = secrets.token_hex(6)
    key = f"wl_{key_id}_{secrets.token_hex(24)}"
    record = ApiKeyRecord(
        tenant_id=tenant,
        key_id=key_id,
        key_hash=hash_key(key),
        actor=actor,
        roles=tuple(roles),
        scopes=tuple(scopes),
        label=label,
        created_at=time.time(),
        revoked_at=None,
    )
    tables.insert_key(record)
    return key, record


def authenticate(tables: ServerTables, key: str | None) -> Principal:
    """The principal of a presented key; ``AuthError`` (401) if it is not a live key."""
    if not key:
        raise AuthError("no API key: send one in the x-api-key header (wayline keys create)")
    parts = key.split("_")
    if len(parts) != 3 or parts[0] != "wl":
        raise AuthError("not a wayline API key (they look like wl_<id>_<secret>)")
    record = tables.find_key(parts[1])
    if record is None or not hmac.compare_digest(record.key_hash, hash_key(key)):
        raise AuthError("unknown API key")
    if record.revoked_at is not None:
        raise AuthError(f"API key {record.key_id} was revoked")
    return Principal(
        tenant=record.tenant_id,
        actor=record.actor,
        roles=record.roles,
        scopes=record.scopes,
        key_id=record.key_id,
    )
