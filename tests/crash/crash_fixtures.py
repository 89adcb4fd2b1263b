"""The CrashRun factory fixture, re-exported by this folder's conftest.py (defined here so
that mypy checks it: mypy sees one ``conftest`` module only, the suite's root one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from crash_harness import CrashRun


@pytest.fixture
def crash_run(tmp_path: Path) -> Iterator[Callable[[str, str], CrashRun]]:
    """Factory for a CrashRun; any child still alive at teardown is killed by its pid."""
    made: list[CrashRun] = []

    def make(graph: str, mode: str) -> CrashRun:
        run = CrashRun(tmp_path, graph, mode)
        made.append(run)
        return run

    yield make
    for run in made:
        run.kill_leftovers()
