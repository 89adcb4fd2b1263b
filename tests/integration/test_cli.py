"""The CLI as a user runs it: real subprocesses, a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import wayline
from wayline.demo.support_agent import build_graph, demo_input

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
    assert missing.returncode == 1
    assert "no run of tenant 'default' has an id starting with 'nope'" in missing.stdout


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
    spec = "wayline.demo.support_agent:build_graph"
    verified = run_cli("runs", "verify", "t-2", "--graph", spec, "--db", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "equal" in verified.stdout


def test_approve_shows_the_proposal_then_records_a_decision(tmp_path: Path) -> None:
    from wayline.demo.refund_agent import build_refund_agent, claim_input

    url = f"sqlite:///{tmp_path / 'approve.db'}"
    app = build_refund_agent(url, lambda key, amount, customer: {"id": "re_1"})
    (question,) = app.invoke(claim_input(), {"configurable": {"thread_id": "c9"}})["__interrupt__"]
    shown = run_cli("approve", "c9", "--actor", "fatima", "--db", url)
    assert shown.returncode == 0 and question.digest in shown.stdout  # asking is no error
    assert "decide with --digest DIGEST" in shown.stdout
    blind = run_cli("approve", "c9", "--actor", "fatima", "--approve", "--db", url)
    assert blind.returncode == 2 and question.digest in blind.stdout  # nothing decided
    refused = run_cli(
        "approve", "c9", "--actor", "ivan", "--digest", question.digest, "--approve", "--db", url
    )
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
        "--approve",
        "--db",
        url,
    )
    assert done.returncode == 0, done.stdout
    assert app.invoke(None, {"configurable": {"thread_id": "c9"}})["refund"] == {"id": "re_1"}


# -- safe operations: reads create nothing, bad input is one clear line, bulk erasure asks ---


def one_clear_line(done: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    text = " ".join(done.stdout.split())  # rich may wrap a long line
    for needle in needles:
        assert needle in text, done.stdout + done.stderr


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    typo = tmp_path / "rnus.db"
    url = f"sqlite:///{typo}"
    for args in (
        ("runs", "list"),
        ("runs", "show", "t-1"),
        ("runs", "bytes", "t-1"),
        ("effects", "list", "t-1"),
        ("export", "t-1"),
        ("purge", "--older-than", "30d", "--dry-run"),
    ):
        one_clear_line(run_cli(*args, "--db", url), 2, "no SQLite database at", str(typo))
    assert list(tmp_path.iterdir()) == []


def test_status_filters_are_checked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    build_graph(url).invoke(demo_input(), {"configurable": {"thread_id": "t-1"}})
    valid = "pending, running, interrupted, parked, done, failed, cancelled"
    one_clear_line(run_cli("runs", "list", "--status", "bogus", "--db", url), 2, valid)
    purge = run_cli("purge", "--older-than", "0s", "--status", "done,bogus", "--yes", "--db", url)
    one_clear_line(purge, 2, "unknown status bogus", valid)
    assert wayline.connect(url).get_run("default", "t-1") is not None


def test_a_graph_that_cannot_load_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    (tmp_path / "factory.py").write_text("def graph(model, tools):\n    raise AssertionError\n")
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    missing = run_cli("worker", str(tmp_path / "missing.py") + ":graph", "--db", url)
    one_clear_line(missing, 2, "no file", "missing.py")
    wrong = run_cli("worker", str(tmp_path / "factory.py") + ":graph", "--db", url)
    one_clear_line(wrong, 2, "factory.py:graph' is a function of (model, tools)", "no arguments")
    broken = run_cli("worker", str(tmp_path / "broken.py") + ":graph", "--db", url)
    one_clear_line(broken, 2, "importing", "ModuleNotFoundError", "no_such_module_here")
    for done in (missing, wrong, broken):
        assert len(done.stdout.strip().splitlines()) <= 3  # one line, however rich wraps it
    # With --processes the first worker process to fail says why, the command stops the
    # other (which may not have got as far) and fails with the first one's code.
    spec = str(tmp_path / "missing.py") + ":graph"
    several = run_cli("worker", spec, "--db", url, "--processes", "2", "--concurrency", "2")
    assert several.returncode == 2, several.stdout + several.stderr
    assert "no file" in several.stdout and "Traceback" not in several.stdout + several.stderr
    # more processes than slots: said before any process starts
    crowded = run_cli("worker", spec, "--db", url, "--processes", "3", "--concurrency", "2")
    one_clear_line(crowded, 2, "--processes 3 with --concurrency 2", "--concurrency 3 or more")


def test_approve_needs_an_explicit_decision(tmp_path: Path) -> None:
    from wayline.demo.refund_agent import build_refund_agent, claim_input

    url = f"sqlite:///{tmp_path / 'approve.db'}"
    app = build_refund_agent(url, lambda key, amount, customer: {"id": "re_1"})
    (question,) = app.invoke(claim_input(), {"configurable": {"thread_id": "c9"}})["__interrupt__"]
    finance = ("--actor", "fatima", "--role", "finance", "--digest", question.digest)
    implied = run_cli("approve", "c9", *finance, "--db", url)
    one_clear_line(implied, 2, "give exactly one of --approve, --reject, --decision")
    both = run_cli("approve", "c9", *finance, "--approve", "--reject", "--db", url)
    one_clear_line(both, 2, "nothing was decided")
    client = wayline.Wayline(url)
    assert client.get("c9").status == "interrupted"
    assert [a.outcome for a in client.audit("c9")] == ["pending"]  # no decision was made
    rejected = run_cli("approve", "c9", *finance, "--reject", "--db", url)
    one_clear_line(rejected, 0, "decision recorded")
    final = app.invoke(None, {"configurable": {"thread_id": "c9"}})
    assert final.get("refund") is None  # rejected: no refund issued


def test_a_bulk_purge_lists_first_and_needs_yes(tmp_path: Path) -> None:
    from wayline.demo.refund_agent import build_refund_agent, claim_input

    url = f"sqlite:///{tmp_path / 'purge.db'}"
    build_graph(url).invoke(demo_input(), {"configurable": {"thread_id": "old-done"}})
    app = build_refund_agent(url, lambda key, amount, customer: {"id": "re_1"})
    app.invoke(claim_input(), {"configurable": {"thread_id": "waiting"}})
    store = wayline.connect(url)
    everything = ("--older-than", "0s", "--status", "done,interrupted", "--db", url)
    dry = run_cli("purge", *everything, "--dry-run")
    one_clear_line(dry, 0, "old-done", "waiting", "would purge 2 run(s)")
    asked = run_cli("purge", *everything)
    one_clear_line(asked, 2, "run again with --yes", "nothing was erased")
    assert {r.run_id for r in store.list_runs("default")} == {"old-done", "waiting"}
    done = run_cli("purge", "--older-than", "0s", "--yes", "--db", url)  # default: finished
    one_clear_line(done, 0, "purged 1 run(s)")
    assert [r.run_id for r in store.list_runs("default")] == ["waiting"]


def test_the_worker_banner_does_not_print_the_password(pg_url: str) -> None:
    import signal
    import time
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(pg_url)
    secret = parts.password or "s3cret-pw-9"  # the test server trusts local users
    user = parts.username or "postgres"
    url = urlunsplit(parts._replace(netloc=f"{user}:{secret}@{parts.netloc.rsplit('@', 1)[-1]}"))
    env = {**os.environ, "COLUMNS": "300"}
    spec = "wayline.demo.support_agent:build_graph"
    proc = subprocess.Popen(
        [*CLI, "worker", spec, "--db", url, "--poll", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        banner = ""
        while "serving" not in banner and time.monotonic() < deadline:
            banner = proc.stdout.readline()
            assert banner or proc.poll() is None, "the worker exited before its banner"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert "serving" in banner
    assert secret not in banner + out and f"{user}:***@" in banner
