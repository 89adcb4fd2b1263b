"""Time travel on SQLite and PostgreSQL: reading any step, forking a finished refund run
under each effect mode against a real payments service (over HTTP), LangGraph's
``checkpoint_id`` / ``update_state`` / ``invoke(None, past_config)``, and where a fork
records its origin."""

from __future__ import annotations

import operator
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from wayline import END, START, StateGraph
from wayline.client import Wayline
from wayline.control import Actor
from wayline.demo.payment_flow import post_charge
from wayline.demo.payments import PaymentsService
from wayline.demo.refund_agent import build_refund_agent, claim_input
from wayline.effects import EffectCall
from wayline.errors import EffectReplayRefused, TimeTravelError
from wayline.graph.context import NodeContext
from wayline.graph.travel import ForkOrigin, checkpoint_id
from wayline.worker import Worker, WorkerConfig

FINANCE = Actor(id="fatima", roles=("finance",), tenant="acme")
RUN = "claim-9"
CFG = {"configurable": {"thread_id": RUN, "tenant": "acme"}}
PAID = 3
"""Step 3 is ``approve`` (the decision); step 4 pays, step 5 notifies (the run ends)."""


@pytest.fixture
def payments(tmp_path: Path) -> Any:
    with PaymentsService(tmp_path / "ledger.db") as service:
        yield service


def finished_refund(url: str, payments: PaymentsService, approved: bool = True) -> Any:
    """A refund run through approval to its end; the refund is a real HTTP request."""

    def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
        charge = post_charge(payments.url, amount, customer, key)
        return {"id": charge["id"], "amount": charge["amount"]}

    app = build_refund_agent(url, refund)
    out = app.invoke(claim_input(), CFG)
    (question,) = out["__interrupt__"]
    client = Wayline(app.store, tenant="acme")
    client.resume(RUN, {"approved": approved}, actor=FINANCE, digest=question.digest)
    app.invoke(None, CFG)
    run = app.store.get_run("acme", RUN)
    assert run is not None and run.status == "done"
    return app


def provider_calls(payments: PaymentsService) -> int:
    return payments.ledger.stats()["requests"]


def test_an_original_fork_calls_no_provider_and_reaches_the_same_state(
    url: str, payments: PaymentsService
) -> None:
    app = finished_refund(url, payments)
    assert provider_calls(payments) == 1
    client = Wayline(app.store, tenant="acme")
    fork = client.fork(RUN, PAID, new_run_id="claim-9-replay", graph=app)  # default: original
    assert provider_calls(payments) == 1  # the refund's recorded outcome, not a new request
    original = app.get_state(CFG)
    replayed = app.get_state({"configurable": {"thread_id": fork, "tenant": "acme"}})
    assert replayed.values == original.values
    assert replayed.read_info.status == "done" and replayed.metadata["step"] == 5
    assert app.store.list_effects("acme", fork) == []  # nothing performed in its name


def test_a_sandbox_fork_calls_the_substitute_and_not_the_provider(
    url: str, payments: PaymentsService
) -> None:
    app = finished_refund(url, payments)
    calls: list[EffectCall] = []

    def fake_refund(call: EffectCall) -> dict[str, Any]:
        calls.append(call)
        return {"id": "re_sandbox", "amount": call.request["amount"]}

    client = Wayline(app.store, tenant="acme")
    fork = client.fork(RUN, PAID, effects="sandbox", substitutes={"refund": fake_refund}, graph=app)
    assert provider_calls(payments) == 1
    (call,) = calls
    assert (call.name, call.key, call.performed) == ("refund", "refund-claim-9", True)
    assert call.original["amount"] == 4200  # the substitute sees what really happened
    state = app.get_state({"configurable": {"thread_id": fork, "tenant": "acme"}})
    assert state.values["refund"] == {"id": "re_sandbox", "amount": 4200}


def test_a_new_effect_in_an_original_fork_is_refused(url: str, payments: PaymentsService) -> None:
    app = finished_refund(url, payments, approved=False)  # declined: no refund was made
    assert provider_calls(payments) == 0
    history = list(app.get_state_history(CFG))
    original = history[0].config
    proposed = next(s for s in history if s.metadata["step"] == PAID - 1)
    # LangGraph's way: edit a past checkpoint, then invoke(None, the edit's config)
    edited = app.update_state(proposed.config, {"decision": {"approved": True}}, as_node="approve")
    assert edited["configurable"]["thread_id"] != RUN  # the edit went to a fork
    with pytest.raises(EffectReplayRefused) as refused:
        app.invoke(None, edited)
    assert refused.value.mode == "original" and refused.value.name == "refund"
    assert "effects='live'" in str(refused.value)
    assert provider_calls(payments) == 0  # nothing was sent
    # the thread's latest branch is the edit: going on through the thread keeps its mode
    fork = edited["configurable"]["thread_id"]
    assert app.get_state(CFG).config["configurable"]["thread_id"] == fork
    with pytest.raises(EffectReplayRefused):
        app.invoke(None, CFG)
    assert provider_calls(payments) == 0
    assert app.get_state(original).values["decision"] == {"approved": False}  # untouched


def test_live_must_be_asked_for_and_uses_a_new_key(url: str, payments: PaymentsService) -> None:
    app = finished_refund(url, payments)
    past = next(s for s in app.get_state_history(CFG) if s.metadata["step"] == PAID)
    app.invoke(None, past.config)  # a past checkpoint, no mode named: original
    assert provider_calls(payments) == 1
    client = Wayline(app.store, tenant="acme")
    fork = client.fork(RUN, PAID, effects="live", graph=app)
    assert provider_calls(payments) == 2  # performed again, under a key of its own
    keys = [c["idempotency_key"] for c in payments.ledger.charges()]
    assert keys == ["refund-claim-9", f"refund-claim-9~{fork}"]
    with pytest.raises(TimeTravelError):
        client.fork(RUN, PAID, effects="replay", graph=app)


def test_a_fork_records_its_origin_in_show_and_export(url: str, payments: PaymentsService) -> None:
    app = finished_refund(url, payments)
    client = Wayline(app.store, tenant="acme")
    fork = client.fork(RUN, PAID, new_run_id="claim-9-b")  # no graph: a worker will run it
    incarnation = app.store.get_run("acme", RUN).incarnation  # part of its derived keys
    expected = ForkOrigin(RUN, PAID, "original", effects_of=RUN, incarnation=incarnation)
    assert client.origin(fork) == expected
    assert client.origin(RUN) is None
    assert client.export(fork)["origin"]["run_id"] == RUN
    assert client.export(fork)["origin"]["step"] == PAID
    worker = Worker(app.store, [app], WorkerConfig(poll_interval=0.05, tenant="acme"))
    worker.run(max_runs=1)
    assert client.wait(fork, timeout=30).status == "done"
    assert provider_calls(payments) == 1
    forked = app.get_state({"configurable": {"thread_id": fork, "tenant": "acme"}})
    assert forked.values == app.get_state(CFG).values
    if url.startswith("sqlite"):  # the CLI reads the same rows
        env = {**os.environ, "COLUMNS": "200"}
        cmd = [sys.executable, "-m", "wayline.cli.main", "runs", "show", fork, "--db", url]
        shown = subprocess.run(
            [*cmd, "--tenant", "acme"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert shown.returncode == 0, shown.stderr
        assert f"run {RUN} at step {PAID} (effects=original)" in shown.stdout


class Counter(TypedDict):
    n: int
    items: Annotated[list[str], operator.add]
    guess: float


def counter_graph(url: str, steps: int = 12) -> Any:
    def step(s: Counter, ctx: NodeContext) -> dict[str, Any]:
        guess = ctx.record("model", random.random)  # a non-deterministic call, recorded
        return {"n": s["n"] + 1, "items": [f"item-{s['n']}"], "guess": guess}

    g = StateGraph(Counter, name="counter", version="1")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < steps else END)
    return g.compile(url, snapshot_every=5)


def test_any_step_by_checkpoint_id_and_forks_read_from_a_copied_snapshot(url: str) -> None:
    app = counter_graph(url)
    cfg = {"configurable": {"thread_id": "c"}}
    final = app.invoke({"n": 0, "items": [], "guess": 0.0}, cfg)
    history = {s.metadata["step"]: s for s in app.get_state_history(cfg)}
    at11 = history[11]
    assert at11.config["configurable"]["checkpoint_id"] == checkpoint_id("default", "c", 11)
    by_id = app.get_state({"configurable": {"thread_id": "c", **_cid(at11)}})
    assert by_id.values == at11.values and by_id.values["n"] == 11
    app.invoke({"n": 11, "items": [], "guess": 0.0}, {"configurable": {"thread_id": "d"}})
    with pytest.raises(TimeTravelError):  # another run's checkpoint id is not this run's
        app.get_state({"configurable": {"thread_id": "d", **_cid(at11)}})
    client = Wayline(app.store)
    fork = client.fork("c", 11, effects="sandbox", graph=app)  # no effects: nothing to stub
    forked = app.get_state({"configurable": {"thread_id": fork}})
    assert forked.values == final  # ctx.record values reused: the same guesses
    at_fork = app.get_state({"configurable": {"thread_id": fork, "step": 11}})
    assert at_fork.values == at11.values
    assert at_fork.read_info.snapshot_step == 10 and at_fork.read_info.replayed_steps == 1
    live = client.fork("c", 11, effects="live", graph=app)
    fresh = app.get_state({"configurable": {"thread_id": live}}).values
    assert fresh["items"] == final["items"] and fresh["guess"] != final["guess"]  # asked again


def _cid(snapshot: Any) -> dict[str, str]:
    return {"checkpoint_id": snapshot.config["configurable"]["checkpoint_id"]}


def test_a_fork_of_a_live_fork_replays_the_live_forks_effects(
    url: str, payments: PaymentsService
) -> None:
    app = finished_refund(url, payments)
    client = Wayline(app.store, tenant="acme")
    live = client.fork(RUN, PAID, effects="live", new_run_id="again", graph=app)
    assert provider_calls(payments) == 2
    replay = client.fork(live, PAID, graph=app)  # original: the live fork's own refund
    assert provider_calls(payments) == 2
    values = {
        r: app.get_state({"configurable": {"thread_id": r, "tenant": "acme"}}).values
        for r in (RUN, live, replay)
    }
    assert values[replay]["refund"] == values[live]["refund"] != values[RUN]["refund"]
    origin = client.origin(replay)
    assert origin is not None and (origin.run_id, origin.effects_of) == (live, live)
