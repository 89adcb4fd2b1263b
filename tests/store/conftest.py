"""Backends the contract suite runs against. PostgreSQL joins this list with its backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import wayline
from wayline.store.base import Store


@pytest.fixture(params=["sqlite-file", "sqlite-memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite-file":
        url = f"sqlite:///{tmp_path / 'contract.db'}"
    else:
        url = "sqlite:///:memory:"
    s = wayline.connect(url)
    yield s
    s.close()
