"""LangGraph tests run only where LangGraph is installed (the ``[langgraph]`` extra, part of
``[dev]``); without it, collection skips this folder and says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import wayline
from wayline.store.base import Store

pytest.importorskip("langgraph.checkpoint.base", reason="needs the wayline[langgraph] extra")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = (
        str(request.getfixturevalue("pg_url"))
        if request.param == "postgres"
        else f"sqlite:///{tmp_path / 'lg.db'}"
    )
    s = wayline.connect(url)
    yield s
    s.close()
