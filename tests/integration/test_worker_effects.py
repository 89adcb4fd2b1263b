"""A worker's effect records go through its group commit, as its steps do: the intents of
the runs it holds share an fsync, and each is still durable before its effect runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import wayline
from wayline import END, START, NodeContext, StateGraph
from wayline.client import Wayline
from wayline.worker import Worker, WorkerConfig

RUNS = 4


class Order(TypedDict, total=False):
    amount: int
    receipt: str


def test_a_workers_effect_records_commit_through_its_group(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'effects.db'}"
    seen: list[str] = []

    def charge(key: str) -> str:
        other = wayline.connect(url)  # another connection: sees only committed rows
        rec = other.get_effect("default", key)
        seen.append(rec.status if rec is not None else "absent")
        other.close()
        return f"receipt-{key[-6:]}"

    def pay(state: Order, ctx: NodeContext) -> dict[str, Any]:
        return {"receipt": ctx.effect("charge", charge, request={"amount": state["amount"]})}

    g = StateGraph(Order, name="pay")
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    store = wayline.connect(url)
    app = g.compile(store)
    ids = [Wayline(store).start(app, {"amount": i}, run_id=f"o{i}") for i in range(RUNS)]
    worker = Worker(url, app, WorkerConfig(concurrency=1, poll_interval=0.01))
    worker.run(max_runs=RUNS)
    assert seen == ["EXECUTING"] * RUNS  # each intent durable before its dispatch
    # A run: its input step, the intent, the outcome, the node's step (which settles it).
    assert worker.group.stats.commits == 4 * RUNS
    for run_id in ids:
        run = store.get_run("default", run_id)
        assert run is not None and run.status == "done"
        (rec,) = store.list_effects("default", run_id)
        assert rec.status == "SUCCEEDED" and rec.fencing_token == run.fencing_token
    worker.store.close()
    store.close()
