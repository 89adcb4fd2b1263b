"""The command line at 80 columns: ``runs list`` fits, its run column is a prefix that
every command taking a run id accepts back, and a prefix that names no run or several is
one red line naming the tenant (and the candidates)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from wayline.demo.support_agent import build_graph, demo_input

CLI = [sys.executable, "-m", "wayline.cli.main"]


def cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def test_runs_list_fits_80_columns_and_its_ids_are_accepted_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    app = build_graph(url)
    ids = [str(uuid.uuid4()) for _ in range(3)]
    ids.append(ids[0][:9] + "twin")  # shares 9 characters with the first
    for run_id in ids:
        app.invoke(demo_input(), {"configurable": {"thread_id": run_id}})
    listed = cli("runs", "list", "--db", url)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    lines = listed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, listed.stdout
    shown = [line.split()[0] for line in lines[2:] if line[:1].strip()]  # not a wrapped line
    assert len(shown) == 4 and not any("…" in s for s in shown), listed.stdout
    assert sorted(shown) == sorted([ids[0][:10], ids[1][:8], ids[2][:8], ids[3][:10]])
    whole = cli("runs", "list", "--ids", "--db", url).stdout.split()
    assert sorted(whole) == sorted(ids)
    for short, run_id in ((ids[1][:8], ids[1]), (ids[3][:10], ids[3])):
        for command in (["runs", "show"], ["runs", "bytes"], ["effects", "list"], ["export"]):
            done = cli(*command, short, "--db", url, columns=200)
            assert done.returncode == 0, (command, done.stdout + done.stderr)
        assert run_id in cli("runs", "show", short, "--db", url, columns=200).stdout


def test_an_unknown_or_ambiguous_prefix_names_the_tenant_and_candidates(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    app = build_graph(url)
    for run_id in ("order-1", "order-2"):
        app.invoke(demo_input(), {"configurable": {"thread_id": run_id}})
    for command in (["runs", "show"], ["runs", "retry"], ["approve", "--actor", "a"], ["purge"]):
        done = cli(*command, "order", "--db", url, columns=200)
        assert done.returncode == 1, (command, done.stdout)
        assert (
            "'order' starts the ids of several runs of tenant 'default' (order-1, order-2): "
            "give more of the id" in done.stdout
        ), command
        done = cli(*command, "nope", "--db", url, columns=200)
        assert done.returncode == 1
        assert "no run of tenant 'default' has an id starting with 'nope'" in done.stdout
    cancelled = cli("runs", "cancel", "order-2", "--db", url, columns=200)
    assert cancelled.returncode == 1 and "order-2" in cancelled.stdout  # done: not cancelled
