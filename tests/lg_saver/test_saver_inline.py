"""Small channel values ride in their checkpoint's row (``wayline.langgraph.inline``):
counted through a wrapper on the store (rows put per step), and read back by fresh
savers at every checkpoint, unchanged channels and savers that never read included."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from test_saver_storage import growing, item

from wayline.langgraph import WaylineSaver
from wayline.store.base import Store
from wayline.store.lg_records import LgOp, LgPut

STEPS = 30
BIG = "x" * 200  # stored: more than inline_bytes


class Tagged(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int
    tag: str
    doc: str


def cfg(thread: str = "t") -> RunnableConfig:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 1_000}


class Puts:
    """The store, recording the channels of the version rows each ``put`` stored."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.rows: list[list[str]] = []

    def lg_write_batch(self, tenant_id: str, thread_id: str, ops: Sequence[LgOp]) -> None:
        self.store.lg_write_batch(tenant_id, thread_id, ops)
        self.rows += [[v.channel for v in op.values] for op in ops if isinstance(op, LgPut)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def tagged(saver: WaylineSaver, steps: int) -> Any:
    def step(state: Tagged) -> dict[str, Any]:
        return {"log": [item(state["n"])], "n": state["n"] + 1}

    g = StateGraph(Tagged)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < steps else END)
    return g.compile(checkpointer=saver)


def test_a_step_stores_one_version_row_the_counter_and_routing_ride_inline(store: Store) -> None:
    counted = Puts(store)
    saver = WaylineSaver(cast(Store, counted))
    out = growing(saver, STEPS).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    assert out["log"] == [item(i) for i in range(STEPS)]
    steps = counted.rows[2:]  # after the input's checkpoint and the first step's full copies
    assert len(steps) == STEPS and all(rows == ["log"] for rows in steps), counted.rows
    fresh = WaylineSaver(store)
    for found in fresh.list(cfg()):
        values = found.checkpoint["channel_values"]
        if "n" in values:
            assert values["log"] == [item(i) for i in range(values["n"])]


def test_unchanged_channels_read_back_at_every_checkpoint_small_inline_large_as_rows(
    store: Store,
) -> None:
    counted = Puts(store)
    saver = WaylineSaver(cast(Store, counted))
    start = {"log": [], "n": 0, "tag": "blue", "doc": BIG}
    tagged(saver, STEPS).invoke(start, cfg(), durability="sync")
    assert sum(rows.count("doc") for rows in counted.rows) == 1  # its one version, one row
    assert all("tag" not in rows for rows in counted.rows)  # in every checkpoint row
    app = tagged(WaylineSaver(store), STEPS)  # a fresh process, nothing cached
    seen = 0
    for snap in app.get_state_history(cfg()):
        if "n" in snap.values:
            assert snap.values["tag"] == "blue" and snap.values["doc"] == BIG
            assert snap.values["log"] == [item(i) for i in range(snap.values["n"])]
            seen += 1
    assert seen == STEPS + 1


def test_a_saver_that_never_read_the_thread_puts_its_unchanged_small_values_inline(
    store: Store,
) -> None:
    first = WaylineSaver(store)
    start = {"log": [], "n": 0, "tag": "blue", "doc": BIG}
    tagged(first, 3).invoke(start, cfg(), durability="sync")
    latest = first.get_tuple(cfg())
    assert latest is not None
    other = WaylineSaver(store)  # puts a child without having read anything
    child = {**latest.checkpoint, "id": latest.checkpoint["id"][:-1] + "z"}
    other.put(latest.config, child, {"source": "update", "step": 99}, {})  # type: ignore[arg-type]
    found = WaylineSaver(store).get_tuple(cfg())
    assert found is not None and found.checkpoint["id"] == child["id"]
    values = found.checkpoint["channel_values"]
    assert values["tag"] == "blue" and values["doc"] == BIG and values["n"] == 3
    assert values["log"] == [item(i) for i in range(3)]
