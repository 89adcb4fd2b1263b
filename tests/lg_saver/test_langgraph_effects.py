"""wayline's effect ledger inside LangGraph nodes (``wayline.langgraph.effect``/``record``):
recorded outcomes are reused when a node runs again, an unknown outcome parks the thread
until an operator resolves it, and a key that would not survive a resume is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import wayline.langgraph.effects as lg_effects
from wayline.effects.ops import resolve_effect
from wayline.errors import RunParkedError, WaylineError
from wayline.langgraph import WaylineSaver, effect, record


class S(TypedDict, total=False):
    amount: int
    receipt: Any
    drawn: Any


class Died(BaseException):
    """The process dies mid-call: nothing after it in the node runs (as under SIGKILL)."""


def one_node(checkpointer: Any, body: Any) -> Any:
    g = StateGraph(S)
    g.add_node("pay", body)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    return g.compile(checkpointer=checkpointer)


CFG = {"configurable": {"thread_id": "pay-1"}}


@pytest.fixture
def saver(tmp_path: Path) -> Any:
    with WaylineSaver.from_url(f"sqlite:///{tmp_path / 'lg.db'}") as s:
        yield s


def test_a_node_that_runs_again_gets_the_recorded_outcome(saver: WaylineSaver) -> None:
    calls: list[str] = []
    fail = [True]

    def charge_once(key: str) -> dict[str, Any]:
        calls.append(key)
        return {"id": "ch_1"}

    def pay(s: S) -> dict[str, Any]:
        receipt = effect("charge", charge_once, request={"amount": s["amount"]})
        drawn = record("draw", lambda: len(calls) * 10)
        if fail[0]:
            fail[0] = False
            raise RuntimeError("the node fails after its effect")
        return {"receipt": receipt, "drawn": drawn}

    app = one_node(saver, pay)
    with pytest.raises(RuntimeError):
        app.invoke({"amount": 5}, CFG, durability="sync")
    out = app.invoke(None, CFG, durability="sync")
    assert out["receipt"] == {"id": "ch_1"} and out["drawn"] == 10
    assert len(calls) == 1 and calls[0].startswith("wl-")
    effects = saver.store.list_effects("default", "pay-1")
    assert [(e.kind, e.name, e.status, e.attempt) for e in effects] == [
        ("effect", "charge", "SUCCEEDED", 1),
        ("record", "draw", "SUCCEEDED", 0),
    ]
    assert effects[0].key == calls[0] and effects[0].node == "pay"


def test_an_unknown_outcome_parks_until_an_operator_resolves_it(saver: WaylineSaver) -> None:
    died = [True]

    def send(key: str) -> dict[str, Any]:
        if died[0]:
            died[0] = False
            raise Died()
        raise AssertionError("never resent without reconcile or idempotent=True")

    app = one_node(saver, lambda s: {"receipt": effect("charge", send, request=s["amount"])})
    with pytest.raises(Died):
        app.invoke({"amount": 5}, CFG, durability="sync")
    with pytest.raises(RunParkedError, match="wayline effects resolve pay-1"):
        app.invoke(None, CFG, durability="sync")
    [rec] = saver.store.list_effects("default", "pay-1")
    assert rec.status == "UNKNOWN"
    resolve_effect(saver.store, "default", "pay-1", rec.key, "succeeded", result={"id": "ch_9"})
    assert app.invoke(None, CFG, durability="sync")["receipt"] == {"id": "ch_9"}


def test_effect_refuses_keys_that_a_resume_would_not_derive_again(
    saver: WaylineSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lg_effects, "CHECKPOINT_WAIT_S", 0.05)
    app = one_node(saver, lambda s: {"receipt": effect("charge", lambda key: key)})
    with pytest.raises(WaylineError, match="durability='sync'"):
        app.invoke({"amount": 5}, CFG, durability="exit")  # nothing durable before the end
    business = one_node(saver, lambda s: {"receipt": effect("c", lambda k: k, key="order-5")})
    assert business.invoke({"amount": 5}, CFG, durability="exit")["receipt"] == "order-5"


def test_effect_needs_a_wayline_saver() -> None:
    app = one_node(InMemorySaver(), lambda s: {"receipt": effect("charge", lambda key: key)})
    with pytest.raises(WaylineError, match="checkpointer=WaylineSaver"):
        app.invoke({"amount": 5}, CFG)


def test_under_durability_async_effect_waits_for_its_step_checkpoint(saver: WaylineSaver) -> None:
    calls: list[str] = []

    def send(key: str) -> str:
        calls.append(key)
        return key

    app = one_node(saver, lambda s: {"receipt": effect("c", send)})
    out = app.invoke({"amount": 5}, CFG, durability="async")
    assert out["receipt"] == calls[0] and len(calls) == 1
    [rec] = saver.store.list_effects("default", "pay-1")
    assert rec.status == "SUCCEEDED"
