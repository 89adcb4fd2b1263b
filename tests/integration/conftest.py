"""Fixtures the integration tests share: a store URL on each backend, a side directory
the worker processes report through, and the worker processes to kill afterwards."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store under test: a SQLite file, then a fresh schema of the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory the test graphs write their side effects to (``WAYLINE_TEST_SIDE``)."""
    path = tmp_path / "side"
    path.mkdir()
    monkeypatch.setenv("WAYLINE_TEST_SIDE", str(path))
    return path


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; killed at its end (continued first, if it stopped one)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()
