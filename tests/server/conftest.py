"""Fixtures: one server per backend per module (SQLite file, the suite's PostgreSQL),
defined in ``server_fixtures`` (type-checked: mypy sees one ``conftest`` module only)."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the server tests need pip install -e '.[dev]'")
pytest.importorskip("langgraph_sdk", reason="the server tests need pip install -e '.[dev]'")

sys.path.insert(0, str(Path(__file__).parent))

from server_fixtures import server, sqlite_server  # noqa: F401
