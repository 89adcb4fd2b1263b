"""The store conformance suite runs each test against every store: wayline's durable store
on SQLite and on PostgreSQL, wayline's InMemoryStore, and LangGraph's InMemoryStore (the
reference). Fixtures live in ``memory_fixtures`` (type-checked: mypy sees one conftest)."""

from memory_fixtures import any_store, backend, durable, mode, pg_backend, sqlite_backend  # noqa: F401
