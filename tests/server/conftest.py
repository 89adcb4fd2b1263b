"""Fixtures: one server per backend per module (SQLite file, the suite's PostgreSQL)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the server tests need pip install -e '.[dev]'")
pytest.importorskip("langgraph_sdk", reason="the server tests need pip install -e '.[dev]'")

sys.path.insert(0, str(Path(__file__).parent))

from harness import Running, start
from pg import schema_url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('srv') / 'server.db'}"
    else:
        url = schema_url(request.getfixturevalue("pg_base_url"))
    running = start(url)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    running = start(f"sqlite:///{tmp_path_factory.mktemp('srv') / 'server.db'}")
    yield running
    running.stop()
