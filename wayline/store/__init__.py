"""The state plane: one store interface, a backend per database, opened by URL."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from wayline.errors import StoreError, StoreURLError
from wayline.store.base import Store
from wayline.store.records import CommitBatch, RunRecord
from wayline.store.sqlite import SQLiteStore
from wayline.store.urls import redact_url

if TYPE_CHECKING:
    from wayline.store.encrypted import KeyProvider

__all__ = ["CommitBatch", "RunRecord", "SQLiteStore", "Store", "open_store", "redact_url"]


def open_store(
    url: str, *, upgrade: bool = False, keys: KeyProvider | None = None, create: bool = True
) -> Store:
    """Open a store by URL: ``sqlite:///relative.db``, ``sqlite:////abs.db``,
    ``sqlite:///:memory:``, ``postgresql://user@host/db``; options as query parameters
    (SQLite ``?synchronous=NORMAL``, ``?secure_delete=off``, ``?busy_timeout_ms=N``: how
    long a write waits for another process's write, 10,000 by default; ``?announce=1``:
    tell servers on the same file which runs each commit moved; PostgreSQL
    ``?schema=NAME&synchronous_commit=off``, ``?prepare_threshold=none`` behind a pooler
    that cannot keep prepared statements).

    A new database gets the current schema. An existing one with an older schema is refused
    with a clear error unless ``upgrade`` (``wayline db upgrade``) applies the migrations.
    With ``keys`` every payload is sealed before it reaches the database, and the store
    remembers it is encrypted: opened without keys later, it is refused (``KeysRequiredError``).
    With ``create=False`` (for callers that only read) a missing or empty database is a
    ``StoreNotFoundError`` and nothing is created. A database wayline must not touch (a newer
    schema, a damaged version row, someone else's tables) is refused with a ``SchemaError``
    before anything is written to it.
    """
    if not isinstance(url, str) or "://" not in url:
        raise StoreURLError(
            f"store URL {url!r} has no scheme: use sqlite:///path/to/file.db "
            "(or sqlite:///:memory: for a throwaway store)"
        )
    parts = urlsplit(url)
    options = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    if parts.scheme == "sqlite":
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if parts.netloc or not path:
            raise StoreURLError(
                f"SQLite URL {url!r} must look like sqlite:///relative.db, sqlite:////abs.db "
                "or sqlite:///:memory:"
            )
        unknown = set(options) - {"synchronous", "secure_delete", "busy_timeout_ms", "announce"}
        if unknown:
            raise StoreURLError(f"unknown SQLite URL option(s) {sorted(unknown)} in {url!r}")
        try:
            return SQLiteStore(
                path,
                synchronous=options.get("synchronous", "FULL"),
                secure_delete=_switch(options.get("secure_delete", "on"), url, "secure_delete"),
                busy_timeout_ms=_milliseconds(options.get("busy_timeout_ms", "10000"), url),
                announce=_switch(options.get("announce", "off"), url, "announce"),
                upgrade=upgrade,
                keys=keys,
                create=create,
            )
        except StoreError:
            raise
        except Exception as exc:
            raise StoreURLError(f"cannot open store {url!r}: {exc}") from exc
    if parts.scheme in ("postgres", "postgresql"):
        from wayline.store.postgres import PostgresStore

        return PostgresStore(url, upgrade=upgrade, keys=keys, create=create)
    raise StoreURLError(f"unsupported store URL scheme {parts.scheme!r} in {url!r}")


def _milliseconds(value: str, url: str) -> int:
    if value.isdigit():
        return int(value)
    raise StoreURLError(f"busy_timeout_ms={value!r} in {url!r} must be a whole number of ms")


def _switch(value: str, url: str, name: str) -> bool:
    if value.lower() in ("on", "1", "true"):
        return True
    if value.lower() in ("off", "0", "false"):
        return False
    raise StoreURLError(f"{name}={value!r} in {url!r} must be on or off")
