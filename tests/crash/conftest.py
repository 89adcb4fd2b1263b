"""Crash tests: put this directory on sys.path (the parent imports the child's graphs) and
provide a CrashRun factory that kills, by pid, any child still alive at teardown."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from crash_harness import CrashRun  # noqa: E402


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
