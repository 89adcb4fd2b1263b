"""Backends the contract suite runs against: every test here runs on each of them.
(Re-exported by this folder's conftest.py; defined here so that mypy checks them.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import wayline
from wayline.store.base import Store

BACKENDS = ["sqlite-file", "sqlite-memory", "postgres"]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite-file":
        return f"sqlite:///{tmp_path / 'contract.db'}"
    if request.param == "sqlite-memory":
        return "sqlite:///:memory:"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = wayline.connect(store_url)
    yield s
    s.close()
