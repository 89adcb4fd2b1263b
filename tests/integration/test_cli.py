"""The CLI as a user runs it: real subprocesses, a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import wayline
from wayline.examples.support_agent import build_graph, demo_input

CLI = [sys.executable, "-m", "wayline.cli.main"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # rich wraps at the terminal width
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def test_demo_kills_resumes_and_matches(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    done = run_cli("demo", "--db", str(db), "--kill-at-round", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SIGKILL" in done.stdout
    assert "equal" in done.stdout and "DIFFERENT" not in done.stdout
    assert "Ran twice: draft round 4 (of" in done.stdout
    assert "charged once" in done.stdout  # part two: ctx.effect against the payments service
    assert "refused (unauthorized)" in done.stdout  # part three: an audited approval
    assert "issued once" in done.stdout
    run = wayline.connect(f"sqlite:///{db}").get_run("default", "ticket-1042")
    assert run is not None and run.status == "done"


def test_runs_list_and_show(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    build_graph(url).invoke(demo_input(), {"configurable": {"thread_id": "t-1"}})
    listed = run_cli("runs", "list", "--db", url)
    assert listed.returncode == 0, listed.stderr
    assert "t-1" in listed.stdout and "done" in listed.stdout
    shown = run_cli("runs", "show", "t-1", "--db", url)
    assert shown.returncode == 0 and "support_agent" in shown.stdout
    missing = run_cli("runs", "show", "nope", "--db", url)
    assert missing.returncode == 1 and "no run 'nope'" in missing.stdout


def test_bad_store_url_is_a_clear_error() -> None:
    done = run_cli("runs", "list", "--db", "mysql://x")
    assert done.returncode == 2
    assert "unsupported store URL scheme 'mysql'" in done.stdout


def test_runs_bytes_and_verify(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    build_graph(url).invoke(demo_input(), {"configurable": {"thread_id": "t-2"}})
    shown = run_cli("runs", "bytes", "t-2", "--db", url)
    assert shown.returncode == 0, shown.stderr
    assert "deltas" in shown.stdout and "write amplification" in shown.stdout
    spec = "wayline.examples.support_agent:build_graph"
    verified = run_cli("runs", "verify", "t-2", "--graph", spec, "--db", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "equal" in verified.stdout


def test_approve_shows_the_proposal_then_records_a_decision(tmp_path: Path) -> None:
    from wayline.examples.refund_agent import build_refund_agent, claim_input

    url = f"sqlite:///{tmp_path / 'approve.db'}"
    app = build_refund_agent(url, lambda key, amount, customer: {"id": "re_1"})
    (question,) = app.invoke(claim_input(), {"configurable": {"thread_id": "c9"}})["__interrupt__"]
    shown = run_cli("approve", "c9", "--actor", "fatima", "--db", url)
    assert shown.returncode == 2 and question.digest in shown.stdout
    refused = run_cli("approve", "c9", "--actor", "ivan", "--digest", question.digest, "--db", url)
    assert refused.returncode == 1 and "unauthorized" in refused.stdout
    done = run_cli(
        "approve",
        "c9",
        "--actor",
        "fatima",
        "--role",
        "finance",
        "--digest",
        question.digest,
        "--db",
        url,
    )
    assert done.returncode == 0, done.stdout
    assert app.invoke(None, {"configurable": {"thread_id": "c9"}})["refund"] == {"id": "re_1"}
