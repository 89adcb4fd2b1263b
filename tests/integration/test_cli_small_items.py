"""Small things a first hour runs into, each as the user meets it: ``serve --demo`` keeps one
demo key working and checks its port before it opens or mints anything; a worker whose
module does not import leaves no database file; ``effects resolve`` on a run that does
not exist says so; a queued run's step reads as the docs say (its input becomes step 0)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import wayline
from wayline.cli.serve import DEMO_LABEL, _demo_key
from wayline.control.keys import authenticate
from wayline.demo.support_agent import build_graph, demo_input
from wayline.effects.ops import resolve_effect
from wayline.errors import AuthError, RunNotFoundError
from wayline.store.server_tables import server_tables

CLI = [sys.executable, "-m", "wayline.cli.main"]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    run = subprocess.run
    return run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def test_serve_refuses_a_port_in_use_before_it_opens_or_mints(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = tmp_path / "demo.db"
        done = cli("serve", "--demo", "--db", f"sqlite:///{db}", "--port", str(port))
    assert done.returncode == 2, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert f"cannot listen on 127.0.0.1:{port}" in text and "choose another --port" in text
    assert "wl_" not in done.stdout  # no key minted
    assert not db.exists()  # nothing opened


def test_a_new_demo_key_retires_the_last_one(tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'demo.db'}")
    tables = server_tables(store)
    first, revoked = _demo_key(tables)
    assert revoked == [] and authenticate(tables, first).actor == "demo"
    second, revoked = _demo_key(tables)
    assert revoked == [first.split("_")[1]]  # named by its key id
    with pytest.raises(AuthError):
        authenticate(tables, first)
    assert authenticate(tables, second).roles == ("finance",)
    live = [k for k in tables.list_keys("default") if k.revoked_at is None]
    assert [k.label for k in live] == [DEMO_LABEL]  # one admin demo key, not one per start


def test_a_worker_whose_module_does_not_import_creates_no_database(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    db = tmp_path / "w.db"
    for target in ("broken.py:graph", "no_such_pkg.mod:graph", "broken:graph"):
        done = cli("worker", target, "--db", f"sqlite:///{db}", cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        assert not db.exists(), target
        assert not list(tmp_path.glob("w.db*")), target  # nor its lock file


def test_resolving_an_effect_of_a_run_that_does_not_exist_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    build_graph(url).invoke(demo_input(), {"configurable": {"thread_id": "t-1"}})
    store = wayline.connect(url)
    with pytest.raises(RunNotFoundError, match="no run 'nope' for tenant 'default'"):
        resolve_effect(store, "default", "nope", "k", "succeeded")
    with pytest.raises(wayline.errors.EffectError, match="'wayline effects list t-1'"):
        resolve_effect(store, "default", "t-1", "k", "succeeded")
    done = cli("effects", "resolve", "nope", "k", "--succeeded", "--db", url)
    assert done.returncode == 1
    assert "no run of tenant 'default' has an id starting with 'nope'" in done.stdout


def test_a_queued_run_shows_no_step_until_its_input_is_step_0(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    wayline.Wayline(url).start(build_graph(url), demo_input(), run_id="queued-1")
    listed = cli("runs", "list", "--db", url)
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("queued-1")]
    assert row.split()[1:4] == ["support_agent@1", "pending", "-"], row
    shown = cli("runs", "show", "queued-1", "--db", url)
    assert "its input is queued: a worker commits it as step 0" in shown.stdout
    (step,) = [line for line in shown.stdout.splitlines() if " step " in line]
    assert "-1" not in step, step
