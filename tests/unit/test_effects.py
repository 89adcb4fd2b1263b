"""The effect ledger through the graph API: once-only outcomes, unknown outcomes parked or
reconciled, retries and dead letters, operator resolution, recorded calls.

A worker's death between dispatch and record is simulated here by a ``SystemExit`` raised
from inside the provider call (it escapes the node like a kill would, leaving the record
EXECUTING); tests/crash kills real processes."""

from __future__ import annotations

import hashlib
import operator
import random
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from effect_rows import effect_record

import wayline
from wayline import END, START, StateGraph
from wayline.codec import default_codec
from wayline.effects import NOT_FOUND, RetryPolicy
from wayline.effects.ops import list_effects, resolve_effect
from wayline.errors import EffectError, EffectFailed, EffectIntentMismatch, RunParkedError

FAST = RetryPolicy(max_attempts=3, initial_delay=0.001, max_delay=0.002)


class Provider:
    """Deduplicates by idempotency key, like a payments API; counts what it really did."""

    def __init__(self) -> None:
        self.charges: dict[str, dict[str, Any]] = {}
        self.requests = 0
        self.fail_next = 0
        self.die_after_commit = False
        self.drop_response_after_commit = False

    def charge(self, key: str | None, amount: int) -> dict[str, Any]:
        self.requests += 1
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("provider unavailable")
        key = key or f"anon-{self.requests}"
        if key not in self.charges:
            self.charges[key] = {"id": f"ch_{len(self.charges) + 1}", "amount": amount}
        if self.die_after_commit:
            self.die_after_commit = False
            raise SystemExit("worker killed after the provider committed")
        if self.drop_response_after_commit:
            self.drop_response_after_commit = False
            raise ConnectionResetError("response lost after commit")
        return self.charges[key]

    def lookup(self, key: str) -> Any:
        return self.charges.get(key, NOT_FOUND)


class State(TypedDict, total=False):
    amount: int
    receipt: dict[str, Any]
    emails: Annotated[list[str], operator.add]
    done: bool


def build(tmp_path: Path, provider: Provider, **effect_kw: Any) -> Any:
    mailer = effect_kw.pop("mailer", None)

    def charge(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        result = ctx.effect(
            "charge",
            lambda key: provider.charge(key, s["amount"]),
            request={"amount": s["amount"]},
            **effect_kw,
        )
        return {"receipt": result}

    def notify(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        if mailer is None:
            return {"done": True}
        sent = ctx.effect(  # the mail API deduplicates by key: resending is safe
            "email", mailer, request={"charge": s["receipt"]["id"]}, retry=FAST, idempotent=True
        )
        return {"emails": [sent], "done": True}

    g = StateGraph(State)
    g.add_node("charge", charge)
    g.add_node("notify", notify)
    g.add_edge(START, "charge")
    g.add_edge("charge", "notify")
    g.add_edge("notify", END)
    return g.compile(f"sqlite:///{tmp_path / 'fx.db'}")


CFG = {"configurable": {"thread_id": "order-1"}}


def test_a_succeeded_effect_is_not_repeated_when_its_node_runs_again(tmp_path: Path) -> None:
    provider = Provider()
    failures = [RuntimeError("crash after the charge")]

    def charge(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        receipt = ctx.effect("charge", lambda key: provider.charge(key, s["amount"]))
        if failures:
            raise failures.pop()
        return {"receipt": receipt}

    g = StateGraph(State)
    g.add_node("charge", charge)
    g.add_edge(START, "charge")
    g.add_edge("charge", END)
    app = g.compile(f"sqlite:///{tmp_path / 'once.db'}")
    with pytest.raises(RuntimeError, match="crash after the charge"):
        app.invoke({"amount": 100}, CFG)
    assert app.invoke(None, CFG)["receipt"] == {"id": "ch_1", "amount": 100}
    assert provider.requests == 1


def test_email_failure_never_repeats_the_refund(tmp_path: Path) -> None:
    provider = Provider()
    outbox: list[str] = []

    def mailer(key: str) -> str:
        outbox.append(key)
        if len(outbox) <= 3:
            raise RuntimeError("smtp down")
        return f"sent {key}"

    app = build(tmp_path, provider, mailer=mailer)
    with pytest.raises(EffectFailed, match="smtp down"):
        app.invoke({"amount": 100}, CFG)
    run = app.store.get_run("default", "order-1")
    assert run.status == "failed" and "smtp down" in run.error
    email = next(e for e in list_effects(app.store, "default", "order-1") if e.name == "email")
    assert (email.status, email.attempt) == ("FAILED", 3)

    resolve_effect(app.store, "default", "order-1", email.key, "retry")  # the dead letter
    final = app.invoke(None, CFG)
    assert final["emails"] == [f"sent {email.key}"]
    assert set(outbox) == {email.key}  # every attempt under one key
    assert len(provider.charges) == 1 and provider.requests == 1  # the refund happened once


def test_lost_response_is_retried_under_the_same_key(tmp_path: Path) -> None:
    provider = Provider()  # deduplicates by key: declared idempotent, a resend is safe
    provider.drop_response_after_commit = True
    app = build(tmp_path, provider, retry=FAST, idempotent=True)
    final = app.invoke({"amount": 250}, CFG)
    assert provider.requests == 2 and len(provider.charges) == 1
    assert final["receipt"] == {"id": "ch_1", "amount": 250}


def test_a_changed_request_under_a_business_key_is_a_new_intent(tmp_path: Path) -> None:
    provider = Provider()
    app = build(tmp_path, provider, key="refund-request-9")
    app.invoke({"amount": 100}, CFG)
    with pytest.raises(EffectIntentMismatch, match="new key"):
        app.invoke({"amount": 999}, {"configurable": {"thread_id": "order-2"}})
    assert len(provider.charges) == 1


def test_a_business_key_converges_duplicate_runs_on_one_action(tmp_path: Path) -> None:
    provider = Provider()
    app = build(tmp_path, provider, key="refund-request-9")
    first = app.invoke({"amount": 100}, CFG)
    second = app.invoke({"amount": 100}, {"configurable": {"thread_id": "order-1-retry"}})
    assert first["receipt"] == second["receipt"]
    assert provider.requests == 1


def test_unknown_outcome_parks_the_run_until_an_operator_resolves_it(tmp_path: Path) -> None:
    provider = Provider()
    provider.die_after_commit = True
    app = build(tmp_path, provider)
    with pytest.raises(SystemExit):
        app.invoke({"amount": 70}, CFG)
    with pytest.raises(RunParkedError, match="wayline effects resolve order-1") as parked:
        app.invoke(None, CFG)
    assert app.store.get_run("default", "order-1").status == "parked"
    (rec,) = list_effects(app.store, "default", "order-1")
    assert rec.status == "UNKNOWN" and rec.key == parked.value.key
    assert provider.requests == 1  # never resent on its own

    with pytest.raises(RunParkedError):  # still parked: nothing was resolved
        app.invoke(None, CFG)
    resolve_effect(
        app.store, "default", "order-1", rec.key, "succeeded", result=provider.charges[rec.key]
    )
    final = app.invoke(None, CFG)
    assert final["receipt"]["id"] == "ch_1" and final["done"]
    assert provider.requests == 1 and len(provider.charges) == 1


def test_unknown_outcome_is_reconciled_with_the_provider(tmp_path: Path) -> None:
    provider = Provider()
    provider.die_after_commit = True
    app = build(tmp_path, provider, reconcile=provider.lookup)
    with pytest.raises(SystemExit):
        app.invoke({"amount": 70}, CFG)
    final = app.invoke(None, CFG)
    assert final["receipt"] == {"id": "ch_1", "amount": 70}
    assert provider.requests == 1


def test_reconcile_not_found_resends_under_the_same_key(tmp_path: Path) -> None:
    provider = Provider()
    seen: list[str] = []

    def die_before_provider(key: str) -> Any:
        seen.append(key)
        if len(seen) == 1:
            raise SystemExit("killed before the request left")
        return provider.charge(key, 5)

    def charge(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        return {"receipt": ctx.effect("charge", die_before_provider, reconcile=provider.lookup)}

    g = StateGraph(State)
    g.add_node("charge", charge)
    g.add_edge(START, "charge")
    g.add_edge("charge", END)
    app = g.compile(f"sqlite:///{tmp_path / 'r.db'}")
    with pytest.raises(SystemExit):
        app.invoke({"amount": 5}, CFG)
    app.invoke(None, CFG)
    assert seen == [seen[0], seen[0]] and provider.requests == 1


def test_idempotent_effect_is_resent_under_the_same_key(tmp_path: Path) -> None:
    provider = Provider()
    provider.die_after_commit = True
    app = build(tmp_path, provider, idempotent=True)
    with pytest.raises(SystemExit):
        app.invoke({"amount": 70}, CFG)
    app.invoke(None, CFG)
    assert provider.requests == 2 and len(provider.charges) == 1  # deduplicated by the key


def test_retry_budget_then_dead_letter_then_operator_retry(tmp_path: Path) -> None:
    provider = Provider()
    provider.fail_next = 5
    app = build(tmp_path, provider, retry=FAST, idempotent=True)
    with pytest.raises(EffectFailed, match="provider unavailable"):
        app.invoke({"amount": 9}, CFG)
    (rec,) = list_effects(app.store, "default", "order-1")
    assert (rec.status, rec.attempt) == ("FAILED", 3)
    with pytest.raises(EffectFailed):  # a plain resume does not resend a failed effect
        app.invoke(None, CFG)
    assert provider.requests == 3
    resolve_effect(app.store, "default", "order-1", rec.key, "retry")
    final = app.invoke(None, CFG)  # a fresh budget: attempts 4 and 5 fail, 6 succeeds
    assert final["done"]
    (rec,) = list_effects(app.store, "default", "order-1")
    assert rec.status == "SUCCEEDED" and rec.attempt == 6
    assert len(provider.charges) == 1 and provider.requests == 6


def test_resolve_refuses_a_settled_effect(tmp_path: Path) -> None:
    provider = Provider()
    app = build(tmp_path, provider)
    app.invoke({"amount": 1}, CFG)
    (rec,) = list_effects(app.store, "default", "order-1")
    with pytest.raises(EffectError, match="SUCCEEDED"):
        resolve_effect(app.store, "default", "order-1", rec.key, "retry")


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_intent_is_durable_before_the_effect_runs_in_every_mode(
    tmp_path: Path, durability: str
) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    observed: list[str] = []

    def look(key: str) -> str:
        other = wayline.connect(url)  # another connection: sees only committed rows
        rec = other.get_effect("default", key)
        observed.append(rec.status if rec else "absent")
        other.close()
        return "ok"

    def node(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        ctx.effect("probe", look)
        return {"done": True}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    g.compile(url).invoke({"amount": 0}, CFG, durability=durability)
    assert observed == ["EXECUTING"]


def test_record_returns_the_recorded_value_when_the_node_runs_again(tmp_path: Path) -> None:
    draws: list[float] = []
    crashed = [False]

    def node(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        value = ctx.record("draw", random.random)
        draws.append(value)
        if not crashed[0]:
            crashed[0] = True
            raise SystemExit("killed after the draw")
        return {"amount": int(value * 1e6)}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    app = g.compile(f"sqlite:///{tmp_path / 'rec.db'}")
    with pytest.raises(SystemExit):
        app.invoke({"amount": 0}, CFG)
    final = app.invoke(None, CFG)
    assert draws[0] == draws[1] and final["amount"] == int(draws[0] * 1e6)


def test_a_business_key_in_flight_in_a_live_run_is_not_taken_over(tmp_path: Path) -> None:
    provider = Provider()
    app = build(tmp_path, provider, key="refund-request-9")
    store = app.store
    store.create_run("default", "owner", graph_name="g", graph_version="1", durability="sync")
    token = store.claim("default", "owner", owner="live-worker", lease_seconds=60)
    digest = hashlib.sha256(default_codec.dumps(["charge", {"amount": 100}])).hexdigest()
    in_flight = effect_record(
        tenant_id="default",
        key="refund-request-9",
        run_id="owner",
        step=1,
        request_digest=digest,
        fencing_token=token,
    )
    assert store.put_effect("owner", token, in_flight, expect=None)
    with pytest.raises(EffectError, match="in flight in run 'owner'"):
        app.invoke({"amount": 100}, CFG)
    assert provider.requests == 0  # neither resent nor reconciled behind the live worker
