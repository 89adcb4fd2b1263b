"""``wayline crons`` as a user runs it: real subprocesses, a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
CLI = [sys.executable, "-m", "wayline.cli.main"]
GRAPH = f"{HERE / 'wakeup_graphs.py'}:sleeper"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # rich wraps at the terminal width
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def test_create_list_pause_and_delete_a_schedule(tmp_path: Path) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'crons.db'}"]
    made = run_cli(
        "crons",
        "create",
        GRAPH,
        "--cron",
        "0 9 * * 1-5",
        "--id",
        "morning",
        "--timezone",
        "Europe/Paris",
        "--input",
        '{"seconds": 0}',
        *db,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert "schedule morning: next tick" in made.stdout
    listed = run_cli("crons", "list", *db)
    assert "morning" in listed.stdout and "0 9 * * 1-5" in listed.stdout
    assert "Europe/Paris" in listed.stdout and " on " in listed.stdout
    paused = run_cli("crons", "pause", "morning", *db)
    assert paused.returncode == 0 and "paused" in paused.stdout
    assert "paused" in run_cli("crons", "list", *db).stdout
    resumed = run_cli("crons", "pause", "morning", "--resume", *db)
    assert "on, next tick" in resumed.stdout
    assert run_cli("crons", "delete", "morning", *db).returncode == 0
    gone = run_cli("crons", "delete", "morning", *db)
    assert gone.returncode == 1 and "no schedule 'morning'" in gone.stdout
    assert "morning" not in run_cli("crons", "list", *db).stdout


def test_a_bad_cron_is_one_clear_line(tmp_path: Path) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'crons.db'}"]
    done = run_cli("crons", "create", GRAPH, "--cron", "every morning", *db)
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    assert "is not a cron expression" in " ".join(done.stdout.split())
    listing = run_cli("crons", "list", "--db", f"sqlite:///{tmp_path / 'typo.db'}")
    assert listing.returncode == 2 and not (tmp_path / "typo.db").exists()
