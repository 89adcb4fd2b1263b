"""Crash tests: put this directory on sys.path (the parent imports the child's graphs) and
provide a CrashRun factory that kills, by pid, any child still alive at teardown (defined
in ``crash_fixtures``, type-checked: mypy sees one ``conftest`` module only)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from crash_fixtures import crash_run  # noqa: E402, F401
