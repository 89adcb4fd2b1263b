"""What an exception from an effect's function means (``wayline.effects.outcomes``): an
ambiguous one (a timeout, a dropped connection) parks the run with one provider call and
is never resent by default; a definite one is retried as the policy allows; a programming
error fails the node as a code error; one effect called twice in a node is two effects."""

from __future__ import annotations

import functools
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.effects import NOT_FOUND, RetryPolicy
from wayline.effects.ops import list_effects, resolve_effect
from wayline.effects.outcomes import DECISION_TABLE
from wayline.errors import EffectDeclined, EffectFailed, RunParkedError

FAST = RetryPolicy(max_attempts=3, initial_delay=0.001, max_delay=0.002)
CFG = {"configurable": {"thread_id": "pay-1"}}


class CardDeclined(Exception):
    """A provider client's own 4xx error class."""


class Counting:
    """A provider that counts every call made to it and answers with ``errors`` in turn."""

    def __init__(self, *errors: BaseException) -> None:
        self.calls: list[str] = []
        self.errors = list(errors)
        self.done: dict[str, dict[str, Any]] = {}

    def charge(self, key: str) -> dict[str, Any]:
        self.calls.append(key)
        if self.errors:
            raise self.errors.pop(0)
        self.done[key] = {"id": f"ch_{len(self.done) + 1}"}
        return self.done[key]

    def lookup(self, key: str) -> Any:
        return self.done.get(key, NOT_FOUND)


class State(TypedDict, total=False):
    receipts: Annotated[list[Any], operator.add]


def build(tmp_path: Path, fn: Any, **kw: Any) -> Any:
    def pay(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        return {"receipts": [ctx.effect("charge", fn, request={"amount": 10}, **kw)]}

    g = StateGraph(State)
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    return g.compile(f"sqlite:///{tmp_path / 'out.db'}")


@pytest.mark.parametrize(
    "error", [TimeoutError("read timed out"), ConnectionError("reset by peer")], ids=repr
)
def test_an_ambiguous_failure_parks_after_one_call(tmp_path: Path, error: Exception) -> None:
    provider = Counting(error)
    app = build(tmp_path, provider.charge, retry=FAST)
    with pytest.raises(RunParkedError, match=type(error).__name__) as parked:
        app.invoke({"receipts": []}, CFG)
    assert "'pay-1'" in str(parked.value) and "effects resolve pay-1" in str(parked.value)
    (rec,) = list_effects(app.store, "default", "pay-1")
    assert (rec.status, rec.attempt) == ("UNKNOWN", 1)
    assert type(error).__name__ in (rec.error or "")
    run = app.store.get_run("default", "pay-1")
    assert run.status == "parked"
    with pytest.raises(RunParkedError):  # a plain resume does not resend it either
        app.invoke(None, CFG)
    assert len(provider.calls) == 1

    # The operator checked with the provider: it did not happen. Resent under the same key.
    resolve_effect(app.store, "default", "pay-1", rec.key, "retry", actor="ops:ann")
    assert app.invoke(None, CFG)["receipts"] == [{"id": "ch_1"}]
    assert provider.calls == [rec.key, rec.key]
    audit = [(a.actor, a.action, a.outcome) for a in app.store.load_audit("default", "pay-1")]
    assert ("ops:ann", "effects.resolve", "retry") in audit


@pytest.mark.parametrize(
    ("policy", "error"),
    [
        (FAST, EffectDeclined("card declined (402)")),
        (RetryPolicy(max_attempts=2, initial_delay=0.001, definite_on=CardDeclined), None),
    ],
    ids=["EffectDeclined", "definite_on"],
)
def test_a_definite_failure_is_retried_as_the_policy_allows(
    tmp_path: Path, policy: RetryPolicy, error: Exception | None
) -> None:
    errors = [error if error is not None else CardDeclined("402") for _ in range(5)]
    provider = Counting(*errors)
    app = build(tmp_path, provider.charge, retry=policy)
    with pytest.raises(EffectFailed, match="'pay-1'"):
        app.invoke({"receipts": []}, CFG)
    assert len(provider.calls) == policy.max_attempts
    (rec,) = list_effects(app.store, "default", "pay-1")
    assert (rec.status, rec.attempt) == ("FAILED", policy.max_attempts)


def test_a_definite_failure_then_success_charges_once(tmp_path: Path) -> None:
    provider = Counting(EffectDeclined("try again later (429)"))
    app = build(tmp_path, provider.charge, retry=FAST)
    assert app.invoke({"receipts": []}, CFG)["receipts"] == [{"id": "ch_1"}]
    assert len(provider.calls) == 2 and len(provider.done) == 1


def test_reconcile_decides_what_an_ambiguous_failure_was(tmp_path: Path) -> None:
    provider = Counting(TimeoutError("read timed out"))
    app = build(tmp_path, provider.charge, reconcile=provider.lookup, retry=FAST)
    # The provider has no record: a resend is safe, under the same key.
    assert app.invoke({"receipts": []}, CFG)["receipts"] == [{"id": "ch_1"}]
    assert len(set(provider.calls)) == 1 and len(provider.calls) == 2


def test_reconcile_finding_the_charge_returns_it_without_a_resend(tmp_path: Path) -> None:
    provider = Counting()

    def charge_then_time_out(key: str) -> Any:
        provider.charge(key)  # the provider did it; the response never came back
        raise TimeoutError("read timed out")

    app = build(tmp_path, charge_then_time_out, reconcile=provider.lookup, retry=FAST)
    assert app.invoke({"receipts": []}, CFG)["receipts"] == [{"id": "ch_1"}]
    assert len(provider.calls) == 1


def test_a_programming_error_fails_the_node_as_code(tmp_path: Path) -> None:
    def broken(key: str) -> Any:
        return charge_card(key, 4200)  # type: ignore[name-defined]  # noqa: F821

    app = build(tmp_path, broken, retry=FAST)
    with pytest.raises(NameError, match="charge_card"):
        app.invoke({"receipts": []}, CFG)
    (rec,) = list_effects(app.store, "default", "pay-1")
    assert rec.status == "PENDING" and "NameError" in (rec.error or "")  # not for an operator
    run = app.store.get_run("default", "pay-1")
    assert run.status == "failed" and "NameError" in (run.error or "")


def test_one_effect_name_called_twice_in_a_node_is_two_effects(tmp_path: Path) -> None:
    """Three charges of 10, 10 and 25 under one name: three keys, three charges, and a
    re-executed node gets the three recorded results back without a call."""
    amounts = [10, 10, 25]
    charged: list[tuple[str, int]] = []
    crash = [RuntimeError("killed after the charges")]

    def charge(key: str, amount: int) -> dict[str, Any]:
        charged.append((key, amount))
        return {"key": key, "amount": amount}

    def pay(s: State, ctx: wayline.NodeContext) -> dict[str, Any]:
        receipts = []
        for amount in amounts:
            receipts.append(
                ctx.effect(
                    "charge", functools.partial(charge, amount=amount), request={"amount": amount}
                )
            )
        if crash:
            raise crash.pop()
        return {"receipts": receipts}

    g = StateGraph(State)
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    app = g.compile(f"sqlite:///{tmp_path / 'twice.db'}")
    with pytest.raises(RuntimeError):
        app.invoke({"receipts": []}, CFG)
    final = app.invoke(None, CFG)
    assert [a for _, a in charged] == amounts  # each charged once, none deduplicated away
    assert len({k for k, _ in charged}) == 3
    assert [r["amount"] for r in final["receipts"]] == amounts
    assert len(list_effects(app.store, "default", "pay-1")) == 3


def test_the_decision_table_covers_every_verdict() -> None:
    text = " ".join(what for _, what in DECISION_TABLE)
    for word in ("code error", "definite", "same key", "reconcile", "UNKNOWN"):
        assert word in text
