"""A divergence is terminal, and every operator action is in the audit: who, when, what.
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

import pytest
from typer.testing import CliRunner

import wayline
from wayline import END, START, StateGraph, interrupt
from wayline.cli.main import app as cli
from wayline.client import Wayline
from wayline.control.audit import OPERATOR_LOG
from wayline.worker import Worker


class S(TypedDict):
    log: Annotated[list[int], operator.add]
    n: int


def sneaky_graph(url: str) -> Any:
    def sneaky(s: S) -> dict[str, Any]:
        s["log"].append(-1)  # mutates the live state behind the reducer's back
        return {"log": [s["n"]], "n": s["n"] + 1}

    g = StateGraph(S, name="sneaky")
    g.add_node("sneaky", sneaky)
    g.add_edge(START, "sneaky")
    g.add_conditional_edges("sneaky", lambda s: "sneaky" if s["n"] < 3 else END)
    return g.compile(url, verify_sample=1.0)


def test_a_divergence_found_by_a_worker_fails_the_run_once(url: str) -> None:
    app = sneaky_graph(url)
    client = Wayline(url)
    client.start(app, {"log": [], "n": 0}, run_id="div")
    worker = Worker(url, app)
    executions = 0
    while (
        claimed := worker.store.claim_next(
            owner=worker.owner, lease_seconds=30, graphs=worker.claims
        )
    ) is not None:
        executions += 1
        worker.execute(*claimed)
        assert executions < 5, "a diverged run is claimed again and again"
    assert executions == 1
    run = client.get("div")
    assert run.status == "failed" and "reconstructs to state digest" in (run.error or "")
    audit = [(a.action, a.outcome) for a in client.audit("div")]
    assert audit.count(("verify", "diverged")) == 1

    assert client.retry("div")  # an operator decides: the run is claimable again
    assert client.get("div").status == "pending"


class Ask(TypedDict, total=False):
    answer: Any


def asking(url: str) -> Any:
    g = StateGraph(Ask, name="asking")
    g.add_node("ask", lambda s: {"answer": interrupt("ok?")})
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g.compile(url)


def test_client_operator_actions_are_audited(url: str) -> None:
    app = asking(url)
    client = Wayline(url, operator="ops:ann")
    client.start(app, {}, run_id="c1")
    assert client.cancel("c1")
    assert [(a.actor, a.action, a.outcome) for a in client.audit("c1")] == [
        ("ops:ann", "cancel", "requested")
    ]
    cfg = {"configurable": {"thread_id": "p1"}}
    app.invoke({}, cfg)
    assert client.purge("p1", actor="ops:bob") > 0
    (receipt,) = client.audit("p1")  # the receipt outlives the run, and holds no payload
    assert (receipt.actor, receipt.action, receipt.outcome) == ("ops:bob", "purge", "erased")
    assert json.loads(receipt.detail or "{}")["rows"] > 0
    assert client.store.get_run("default", "p1") is None
    assert client.purge("p1") == 0  # again: nothing left to erase, both receipts kept
    assert [a.outcome for a in client.audit("p1")] == ["erased", "none"]


def test_cli_operator_actions_are_audited(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAYLINE_ACTOR", "ops:cli")
    app = asking(url)
    client = Wayline(url)
    client.start(app, {}, run_id="r1")
    store = wayline.connect(url)
    assert store.request_cancel("default", "r1")
    runner = CliRunner()

    def ok(*args: str) -> str:
        result = runner.invoke(cli, [*args, "--db", url])
        assert result.exit_code == 0, result.output
        return result.output

    created = ok("keys", "create", "--tenant", "default", "--actor", "bot")
    key_id = created.split()[1].rstrip(":")
    ok("keys", "revoke", key_id)
    ok("retention", "apply", "--policy", "default=0d:purge")
    ops = [(a.actor, a.action) for a in store.load_audit("default", OPERATOR_LOG)]
    assert ("ops:cli", "keys.create") in ops and ("ops:cli", "keys.revoke") in ops
    assert ("ops:cli", "retention.apply") in ops
    store.close()


def test_runs_retry_and_cancel_commands_leave_audit_rows(url: str) -> None:
    app = asking(url)
    client = Wayline(url)
    client.start(app, {}, run_id="x")
    runner = CliRunner()
    result = runner.invoke(cli, ["runs", "cancel", "x", "--db", url], env={"WAYLINE_ACTOR": "o"})
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["runs", "retry", "x", "--db", url], env={"WAYLINE_ACTOR": "o"})
    assert result.exit_code == 1  # a cancelled run is not failed or parked
    actions = [(a.actor, a.action, a.outcome) for a in client.audit("x")]
    assert actions == [("o", "cancel", "requested"), ("o", "retry", "refused")]
