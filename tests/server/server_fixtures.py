"""Fixtures: one server per backend per module (SQLite file, the suite's PostgreSQL).
Re-exported by this folder's conftest.py (defined here so that mypy checks them: mypy sees
one ``conftest`` module only, the suite's root one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
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
