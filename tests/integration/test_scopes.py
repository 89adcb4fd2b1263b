"""Read is execution: a ``read`` client or CLI invocation cannot start, resume, approve,
cancel or erase (ScopeError, nothing written); it can read, audit and export."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import wayline
from wayline.control import Actor
from wayline.demo.refund_agent import build_refund_agent, claim_input
from wayline.errors import ScopeError

CLI = [sys.executable, "-m", "wayline.cli.main"]


def run_cli(*args: str, scope: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("WAYLINE_SCOPE", None)
    if scope is not None:
        env["WAYLINE_SCOPE"] = scope
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def waiting_claim(url: str) -> tuple[wayline.CompiledGraph, str]:
    app = build_refund_agent(url, lambda key, amount, customer: {"id": "re_1"})
    (question,) = app.invoke(claim_input(), {"configurable": {"thread_id": "c9"}})["__interrupt__"]
    assert question.digest is not None
    return app, question.digest


def test_a_read_client_cannot_start_resume_approve_or_erase(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scopes.db'}"
    app, digest = waiting_claim(url)
    reader = wayline.Wayline(url, scope="read")
    finance = Actor(id="fatima", roles=("finance",), tenant="default")
    audit_before = len(reader.audit("c9"))
    with pytest.raises(ScopeError, match="'execute'"):
        reader.resume("c9", {"approved": True}, actor=finance, digest=digest)
    with pytest.raises(ScopeError, match="'execute'"):
        reader.start(app, claim_input(), run_id="c10")
    with pytest.raises(ScopeError, match="'execute'"):
        reader.cancel("c9")
    with pytest.raises(ScopeError, match="'admin'"):
        reader.erase_subject("anyone")
    with pytest.raises(ScopeError, match="'admin'"):
        reader.purge("c9")
    assert reader.get("c9").status == "interrupted"  # reading is allowed, nothing changed
    assert reader.store.get_run("default", "c10") is None
    assert len(reader.audit("c9")) == audit_before and reader.export("c9")["runs"]
    executor = wayline.Wayline(url, scope="execute")
    executor.resume("c9", {"approved": True}, actor=finance, digest=digest)
    with pytest.raises(ScopeError, match="'admin'"):
        executor.purge("c9")
    with pytest.raises(wayline.errors.ConfigError):
        wayline.Wayline(url, scope="root")  # type: ignore[arg-type]


def test_the_cli_in_read_scope_cannot_approve_or_erase(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scopes.db'}"
    _, digest = waiting_claim(url)
    approve = ["approve", "c9", "--actor", "fatima", "--role", "finance", "--approve"]
    refused = run_cli(*approve, "--digest", digest, "--db", url, scope="read")
    assert refused.returncode == 1 and "'read' scope" in refused.stdout
    refused = run_cli("--scope", "read", "purge", "--subject", "s", "--yes", "--db", url)
    assert refused.returncode == 1 and "needs 'admin'" in refused.stdout
    refused = run_cli("--scope", "read", "runs", "cancel", "c9", "--db", url)
    assert refused.returncode == 1 and "needs 'execute'" in refused.stdout
    assert run_cli("--scope", "read", "export", "c9", "--db", url).returncode == 0
    assert wayline.Wayline(url).get("c9").status == "interrupted"
    done = run_cli(*approve, "--digest", digest, "--db", url, scope="execute")
    assert done.returncode == 0, done.stdout
