"""The snapshot policy by counts: folds at any position stay under the share of a snapshot
read the policy allows (not a fixed step count), a read makes the same few queries however
many deltas it folds, and snapshots add at most 1/WRITE_FACTOR to what a run writes."""

from __future__ import annotations

import hashlib
import operator
from typing import Annotated, Any, TypedDict

import wayline
from wayline import END, START, StateGraph
from wayline.graph.snapshot_policy import FOLD_ROW, FOLD_SHARE, READ_ROW, WRITE_FACTOR

STEPS = 300
EVERY = 100
ITEM = 500


class Acc(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int


class Small(TypedDict):
    n: int


def _item(n: int) -> str:
    return (hashlib.sha256(str(n).encode()).hexdigest() * 8)[:ITEM]


def _graph(schema: Any, node: Any) -> Any:
    g = StateGraph(schema)
    g.add_node("step", node)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < STEPS else END)
    return g


def _run(schema: Any, node: Any, first: dict[str, Any]) -> tuple[Any, Any]:
    store = wayline.connect("sqlite:///:memory:")
    app = _graph(schema, node).compile(store, snapshot_every=EVERY)
    cfg = {"configurable": {"thread_id": "t"}, "recursion_limit": 10_000}
    app.invoke(first, cfg, durability="exit")
    return app, store


def _at(app: Any, step: int) -> Any:
    return app.get_state({"configurable": {"thread_id": "t", "step": step}}).read_info


def test_folds_follow_the_snapshot_read_they_are_bounded_by() -> None:
    app, store = _run(Acc, lambda s: {"log": [_item(s["n"])], "n": s["n"] + 1}, {"log": [], "n": 0})
    payload: dict[int, int] = {}  # snapshot step -> its payload bytes (the write bound's base)
    for m in store.load_meter("default", "t"):
        if m.table == "snapshots":
            payload[m.step] = payload.get(m.step, 0) + m.bytes
    worst = 0
    for step in range(1, STEPS + 1):
        meta = _at(app, step)
        folds, snap = meta.replayed_steps, meta.snapshot_step
        assert folds <= EVERY
        if snap is None:
            continue
        # Allowed: the fold work a share of the snapshot read pays for (its row and ~snap
        # items), or the deltas the write bound waits for, whichever is more; one step more
        # (the step that crosses the bound commits with its snapshot).
        share = FOLD_SHARE * (READ_ROW + ITEM * snap) / (FOLD_ROW + ITEM)
        write_bound = WRITE_FACTOR * payload[snap] / ITEM
        assert folds <= max(share, write_bound) + 1, (step, folds, share, write_bound)
        if step >= 200:
            worst = max(worst, folds)
    assert 0 < worst < EVERY // 3  # a fixed cadence of 100 would fold up to 99 here


def test_a_read_makes_the_same_queries_however_many_deltas_it_folds() -> None:
    app, store = _run(Acc, lambda s: {"log": [_item(s["n"])], "n": s["n"] + 1}, {"log": [], "n": 0})
    reads = [0]
    inner = store._read

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads[0] += 1
        return inner(*args, **kwargs)

    store._read = counted
    by_folds: dict[int, int] = {}  # deltas folded -> queries read
    for step in range(200, STEPS + 1):
        before = reads[0]
        folds = _at(app, step).replayed_steps
        by_folds.setdefault(folds, reads[0] - before)
    assert len(by_folds) > 2  # positions with different numbers of deltas to fold
    assert len(set(by_folds.values())) == 1, by_folds  # one query for all the deltas


def test_snapshots_of_a_small_state_stay_a_small_share_of_its_bytes() -> None:
    app, store = _run(Small, lambda s: {"n": s["n"] + 1}, {"n": 0})
    meter = store.load_meter("default", "t")
    deltas = sum(m.bytes for m in meter if m.table == "deltas")
    snapshots = [m for m in meter if m.table == "snapshots"]
    largest = max(m.bytes for m in snapshots)
    assert sum(m.bytes for m in snapshots) <= deltas / WRITE_FACTOR + 2 * largest
    assert max(_at(app, step).replayed_steps for step in range(1, STEPS + 1)) <= EVERY
