"""What a fresh WaylineSaver's ``get_state`` of a long thread costs, by counts, never by a
clock: the statements it sends to the store do not grow with the thread (one for the
checkpoint, one for its pending writes, and per appending channel one for the version
with the deltas under it, one for the rest of its path from the skip row, one for the
writes the deltas refer to); the rows it opens grow with the skip levels only; every row
is opened once and deserialized at most once; the bytes it opens are linear in the value
(no quadratic copies). SQLite's read connections map the file (``READ_MMAP_BYTES``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from test_saver_storage import growing, item

import wayline
from wayline.langgraph import WaylineSaver
from wayline.store.base import Store
from wayline.store.sqlite import READ_MMAP_BYTES

SKIP = 8
"""Skip rows every 8 versions: a thousand steps reach three levels."""


def cfg(steps: int) -> RunnableConfig:
    return {"configurable": {"thread_id": f"t{steps}"}, "recursion_limit": 100_000}


def read_counts(store: Store, steps: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Write a thread of ``steps`` appended items, then count a fresh saver's read of it."""
    growing(WaylineSaver(store, chain_skip=SKIP), steps).invoke(
        {"log": [], "n": 0}, cfg(steps), durability="sync"
    )
    fresh = WaylineSaver(store, chain_skip=SKIP)
    counts = {"statements": 0, "opened": 0, "opened_bytes": 0, "loads": 0}
    seen: set[int] = set()
    read, get, loads = store._read, store.payloads.get, fresh.serde.loads_typed  # type: ignore[attr-defined]

    def counted_read(*args: Any, **kw: Any) -> Any:
        counts["statements"] += 1
        return read(*args, **kw)

    def counted_get(ident: Any, *args: Any) -> Any:
        counts["opened"] += 1
        seen.add(hash(tuple(ident)))
        out = get(ident, *args)
        counts["opened_bytes"] += len(out)
        return out

    def counted_loads(*args: Any) -> Any:
        counts["loads"] += 1
        return loads(*args)

    with monkeypatch.context() as m:
        m.setattr(store, "_read", counted_read)
        m.setattr(store.payloads, "get", counted_get)  # type: ignore[attr-defined]
        m.setattr(fresh.serde, "loads_typed", counted_loads)
        snap = growing(fresh, steps).get_state(cfg(steps))
    assert snap.values["log"] == [item(i) for i in range(steps)]  # the same state, exactly
    assert len(seen) == counts["opened"]  # no row opened twice
    return counts


def test_a_fresh_read_sends_the_same_statements_at_100_and_1000_steps(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = read_counts(store, 100, monkeypatch)
    long = read_counts(store, 1_000, monkeypatch)
    # checkpoint, pending writes, the version with its deltas, the rest of its path from the
    # skip row, the writes its deltas refer to: 5 whatever the length
    assert short["statements"] == long["statements"] == 5
    for counts, steps in ((short, 100), (long, 1_000)):
        levels = math.ceil(math.log(steps, SKIP))
        # the checkpoint; the version and at most SKIP rows under it; at most SKIP - 1
        # rows a level above; the writes of at most SKIP - 1 deltas
        bound = 1 + (1 + SKIP) + (SKIP - 1) * levels + (SKIP - 1)
        assert counts["opened"] <= bound, (steps, counts)
        # each row deserialized at most once, plus the checkpoint's inline values
        assert counts["loads"] <= counts["opened"] + 3, (steps, counts)
        # a full copy and suffixes at most twice its size (``full_copy_ratio`` 2): linear
        value_bytes = len(WaylineSaver(store).serde.dumps_typed([item(0)] * steps)[1])
        assert counts["opened_bytes"] <= 3 * value_bytes + 16_384, (steps, counts)
    assert long["opened"] - short["opened"] <= (SKIP - 1) * 2  # the levels, not the steps


def test_sqlite_read_connections_map_the_file(tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'map.db'}")
    try:
        ((mapped,),) = store._read("PRAGMA mmap_size", ())  # type: ignore[attr-defined]
        assert mapped == READ_MMAP_BYTES
    finally:
        store.close()


def test_a_value_run_is_the_version_and_the_newest_rows_of_its_chain_below_it(
    store: Store,
) -> None:
    saver = WaylineSaver(store, chain_skip=SKIP)
    growing(saver, 100).invoke({"log": [], "n": 0}, cfg(100), durability="sync")
    found = saver.get_tuple(cfg(100))
    assert found is not None
    version = str(found.checkpoint["channel_versions"]["log"])
    run = store.lg_load_value_run("default", "t100", "", "log", version, SKIP + 1)
    top = run[0]
    assert top.version == version and top.base is not None  # a delta, first
    assert 1 < len(run) <= SKIP + 1
    assert [v.version for v in run] == sorted((v.version for v in run), reverse=True)
    assert {v.root for v in run} == {top.root}  # its own chain only
    chain = store.lg_load_chain("default", "t100", "", "log", top.root)
    newest = sorted((v for v in chain if v.version <= version), key=lambda v: v.version)
    assert len(run) == min(SKIP + 1, len(newest))
    assert run == newest[::-1][: len(run)]  # the rows as stored, opened
    full = store.lg_load_value_run("default", "t100", "", "log", top.root, SKIP + 1)
    assert [v.version for v in full] == [top.root]  # a full copy comes alone
    assert store.lg_load_value_run("default", "t100", "", "log", "0000000000.none", 9) == []
