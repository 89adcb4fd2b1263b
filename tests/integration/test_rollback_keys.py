"""Effect keys across a rollback (``Store.roll_back`` with ``wayline.ids.rolled_back``), on
SQLite and PostgreSQL against a real payments service: the step run again after the
rollback charges under a new key (the removed run's charge stays in the ledger), and a fork
replaying the thread in ``original`` mode finds each step's own outcome: the charge before
the rollback point, and the new run's after it, never the removed run's."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import httpx
import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.client import Wayline
from wayline.demo.payment_flow import post_charge
from wayline.demo.payments import PaymentsService
from wayline.graph.context import NodeContext
from wayline.ids import rolled_back

T = "acme"


class Paid(TypedDict, total=False):
    amount: int
    receipts: Annotated[list[str], operator.add]


@pytest.fixture
def payments(tmp_path: Path) -> Iterator[PaymentsService]:
    with PaymentsService(tmp_path / "ledger.db") as service:
        yield service


def test_a_rollback_gives_the_steps_run_again_new_keys_and_forks_find_their_own(
    url: str, payments: PaymentsService
) -> None:
    def charge(s: Paid, ctx: NodeContext) -> dict[str, Any]:
        made = ctx.effect(
            "charge",
            lambda key: post_charge(payments.url, s["amount"], "cus_1", key),
            request={"amount": s["amount"]},
        )
        return {"receipts": [made["id"]]}

    g = StateGraph(Paid, name="charge_once")
    g.add_node("charge", charge)
    g.add_edge(START, "charge")
    g.add_edge("charge", END)
    store = wayline.connect(url)
    app = g.compile(store)

    def state(thread: str, step: int | None = None) -> Any:
        conf: dict[str, Any] = {"thread_id": thread, "tenant": T}
        return app.get_state({"configurable": conf | ({} if step is None else {"step": step})})

    cfg = {"configurable": {"thread_id": "t", "tenant": T}}
    app.invoke({"amount": 5}, cfg)  # steps 0 (input) and 1 (charge 5)
    app.invoke({"amount": 7}, cfg)  # steps 2 and 3 (charge 7): rolled back below
    run = store.get_run(T, "t")
    assert run is not None and run.step == 3
    inc = rolled_back(run.incarnation, 1, "n1")
    assert store.roll_back(T, "t", after_step=1, incarnation=inc, actor="ops") == 2
    out = app.invoke({"amount": 7}, cfg)  # steps 2 and 3 again: the same request, new key
    stats = httpx.get(f"{payments.url}/stats").json()
    assert stats["charges"] == 3 and stats["deduplicated"] == 0
    charges = store.list_effects(T, "t")
    # the removed run's charge at step 3 stays beside the new one: it happened
    assert [(e.step, e.status) for e in charges] == [(1, "SUCCEEDED"), *[(3, "SUCCEEDED")] * 2]
    assert len({e.key for e in charges}) == 3
    assert len(out["receipts"]) == 2 and out == state("t").values

    client = Wayline(store, tenant=T)
    for at, ends in ((0, 1), (2, None)):  # before the rollback point, and after it
        fork = client.fork("t", at, graph=app)
        assert state(fork).values == state("t", ends).values
    assert httpx.get(f"{payments.url}/stats").json()["charges"] == 3  # none sent again
    store.close()
