"""A fresh WaylineSaver reads a thread's latest checkpoint in a bounded number of rows,
whatever the thread's length: the value chain of an append-only channel is walked through
its skip rows (at most ``skip - 1`` rows a level), and only the writes of the rows walked are
loaded. Counted through a wrapper on the store, never timed."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from test_saver_storage import growing, item

from wayline.langgraph import WaylineSaver
from wayline.store.base import Store


def cfg() -> RunnableConfig:
    return {"configurable": {"thread_id": "t"}, "recursion_limit": 100_000}


class Counting:
    """The store, counting the LangGraph value reads and the rows they return."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if not name.startswith("lg_load"):
            return found

        def counted(*args: Any, **kw: Any) -> Any:
            out = found(*args, **kw)
            self.calls[name] += 1
            self.rows[name] += len(out) if isinstance(out, list) else int(out is not None)
            return out

        return counted


def digit_sum(n: int, base: int) -> int:
    total = 0
    while n:
        n, digit = divmod(n, base)
        total += digit
    return total


def test_a_fresh_read_of_a_2000_step_thread_reads_a_bounded_chain(store: Store) -> None:
    steps = 2_000
    writer = WaylineSaver(store)
    skip = writer.values.skip
    out = growing(writer, steps).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    assert out["log"] == [item(i) for i in range(steps)]

    counting = Counting(store)
    fresh = WaylineSaver(cast(Store, counting))
    folds = [0]
    found = fresh.get_tuple(cfg())
    assert found is not None
    assert found.checkpoint["channel_values"]["log"] == [item(i) for i in range(steps)]
    version = str(found.checkpoint["channel_versions"]["log"])
    row = store.lg_load_value("default", "t", "", "log", version)
    assert row is not None and row.base is not None  # the newest version is a delta
    chain = store.lg_load_chain("default", "t", "", "log", row.root)
    assert len(chain) > 4 * skip  # a long chain: without skip rows it would all be read

    # The channel's path: at most (skip - 1) rows per level of the chain, plus the version
    # itself and its full copy, read one level a query (a range of at most skip rows below
    # a base); and only the writes of the one-version deltas.
    levels = math.ceil(math.log(len(chain), skip))
    assert counting.calls["lg_load_chain"] == 0
    versions = found.checkpoint["channel_versions"]
    others = sum(  # one full copy a version each, unless it rides in the checkpoint row
        1
        for channel, v in versions.items()
        if channel != "log" and store.lg_load_value("default", "t", "", channel, str(v))
    )
    assert others < len(versions) - 1  # the counter and the routing channel are inline
    # a read a stored version: the version itself with the one-version deltas under it (a
    # range of at most skip rows), then from the skip row the rest of the path by the
    # counts it carries: two reads, not one a row
    assert counting.calls["lg_load_value"] == 0
    assert counting.calls["lg_load_value_run"] == others + 1
    assert counting.rows["lg_load_value_run"] <= others + 1 + skip
    assert counting.calls["lg_load_chain_below"] + counting.calls["lg_load_chain_at"] <= 1
    assert counting.rows["lg_load_chain_at"] <= (skip - 1) * levels + 1
    assert counting.rows["lg_load_channel_writes"] <= skip
    fresh._value("default", "t", "", "log", version, remember=False, folds=folds)
    assert folds[0] <= (skip - 1) * levels + 1
    count = fresh.values.counts(fresh._path("default", "t", "", row))[0]
    assert folds[0] == digit_sum(count, skip)


def test_a_fresh_saver_goes_on_across_skip_rows_and_every_checkpoint_reads_its_own_value(
    store: Store,
) -> None:
    skip = 4
    first = WaylineSaver(store)
    first.values.skip = skip
    growing(first, 40).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    second = WaylineSaver(store)  # a fresh process: its skip rows start from what it reads
    second.values.skip = skip
    out = growing(second, 90).invoke({"log": [], "n": 40}, cfg(), durability="sync")
    assert out["log"] == [item(i) for i in range(90)]
    thread = store.lg_thread_rows("default", "t")
    segs = [v for v in thread.values if v.channel == "log" and v.payload.startswith(b"seg")]
    assert len(segs) >= 90 // skip - 2
    seen = 0
    for snap in growing(WaylineSaver(store), 90).get_state_history(cfg()):
        if "n" in snap.values:
            assert snap.values["log"] == [item(i) for i in range(snap.values["n"])]
            seen += 1
    assert seen == 41 + 52  # each invoke: its input checkpoint, then a step each
