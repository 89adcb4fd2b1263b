"""Session-wide fixtures: one real PostgreSQL server for every test that needs one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pg import schema_url, start_postgres


@pytest.fixture(scope="session")
def pg_base_url() -> str:
    return start_postgres()


@pytest.fixture
def pg_url(pg_base_url: str) -> str:
    """A URL to an empty schema of the session's PostgreSQL."""
    return schema_url(pg_base_url)
