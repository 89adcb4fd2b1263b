"""``wayline serve --verify-rate``: the server's in-process workers verify finished runs on
a schedule as ``wayline worker --verify-rate`` does (``wayline.worker.verifier``), so a
divergence planted in a finished run is found and audited without a worker process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from harness import start, until
from langgraph_sdk import get_sync_client
from typer.testing import CliRunner

import wayline
from wayline.cli.main import app as cli
from wayline.errors import ConfigError
from wayline.server import ServerConfig, create_app


def test_served_workers_verify_finished_runs_on_a_schedule(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'verify.db'}"
    server = start(url, workers=1, verify_rate=600)  # ten a second
    try:
        c = get_sync_client(url=server.url, api_key=server.keys["alice"])
        runs = [c.threads.create()["thread_id"] for _ in range(2)]
        for tid in runs:
            c.runs.wait(tid, "slow", input={"n": 0, "until": 2})
        bad, good = runs
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        with db:  # a divergence planted in a finished run: its committed digest changed
            db.execute("UPDATE runs SET state_digest = ? WHERE run_id = ?", ("0" * 64, bad))
        db.close()
        store = server.store

        def findings(run_id: str) -> list[tuple[str, str]]:
            return [(a.action, a.outcome) for a in store.load_audit("acme", run_id)]

        assert until(lambda: findings(bad), what="the planted divergence to be audited") == [
            ("verify", "diverged")
        ]
        assert findings(good) == []  # verified too (turn by turn), and found right
    finally:
        server.stop()


def test_verify_rate_needs_in_process_workers(tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'none.db'}")
    from graphs import compiled

    with pytest.raises(ConfigError, match="with --workers 0 give --verify-rate to wayline"):
        create_app(store, compiled(store), ServerConfig(workers=0, verify_rate=5))
    store.close()
    result = CliRunner().invoke(
        cli,
        ["serve", "g=graphs:slow", "--workers", "0", "--verify-rate", "5", "--db", "sqlite://"],
    )
    assert result.exit_code == 2
    assert "--verify-rate needs in-process workers" in result.output
