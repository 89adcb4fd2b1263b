"""The ``stream_events`` table on SQLite and PostgreSQL: appended in order and fenced by the
lease, read back after a sequence number within a step range, tenant-scoped, checksummed and
sealed through the store's payload seam, metered, and purged with the run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from stored_rows import stored_rows

import wayline
from wayline.errors import CorruptionError
from wayline.store.base import Store
from wayline.store.encrypted import StaticKeys
from wayline.store.stream_sql import StreamEvent

MARKER = b"PLAINTEXT-MARKER-c0de"


@pytest.fixture(params=["sqlite-file", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite-file":
        return f"sqlite:///{tmp_path / 'events.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    s = wayline.connect(url)
    yield s
    s.close()


def held(store: Store) -> int:
    return claimed(store, "t1", "r1")


def claimed(store: Store, tenant: str, run: str) -> int:
    store.enqueue(tenant, run, b"x", graph_name="g", graph_version="1", durability="sync")
    return store.claim(tenant, run, owner="w1", lease_seconds=30)


def ev(step: int, payload: bytes, node: str = "a") -> StreamEvent:
    return StreamEvent(step, node, "custom", payload)


def test_append_in_order_read_after_seq_and_step_range(store: Store) -> None:
    token = held(store)
    assert store.append_stream_events("t1", "r1", token, [ev(0, b"p0"), ev(0, b"p1")]) == 2
    assert store.append_stream_events("t1", "r1", token, [ev(1, b"p2", "b")]) == 1
    assert store.append_stream_events("t1", "r1", token, []) == 0
    got = store.load_stream_events("t1", "r1", after_seq=0, after_step=-1, to_step=5)
    assert [(e.seq, e.step, e.node, e.mode, e.payload) for e in got] == [
        (1, 0, "a", "custom", b"p0"),
        (2, 0, "a", "custom", b"p1"),
        (3, 1, "b", "custom", b"p2"),
    ]
    after = store.load_stream_events("t1", "r1", after_seq=1, after_step=-1, to_step=0)
    assert [e.payload for e in after] == [b"p1"]  # after seq 1, steps up to 0
    assert [
        e.payload
        for e in store.load_stream_events("t1", "r1", after_seq=0, after_step=0, to_step=5)
    ] == [b"p2"]  # a later run on the thread sees its own steps only
    # metered: one row per event, its stored bytes, channel = the mode
    assert store.held_bytes("t1", "r1")["stream_events"] == 6


def test_a_stale_lease_appends_nothing_and_tenants_are_apart(store: Store) -> None:
    old = held(store)
    new = store.claim("t1", "r1", owner="w2", lease_seconds=30, steal=True)
    assert store.append_stream_events("t1", "r1", old, [ev(0, b"zombie")]) == 0
    assert store.append_stream_events("t1", "r1", new, [ev(0, b"live")]) == 1
    other = claimed(store, "t2", "r1")
    assert store.append_stream_events("t2", "r1", other, [ev(0, b"theirs")]) == 1
    mine = store.load_stream_events("t1", "r1", after_seq=0, after_step=-1, to_step=9)
    assert [e.payload for e in mine] == [b"live"]
    assert store.purge_run("t1", "r1") > 0
    assert store.load_stream_events("t1", "r1", after_seq=0, after_step=-1, to_step=9) == []
    theirs = store.load_stream_events("t2", "r1", after_seq=0, after_step=-1, to_step=9)
    assert [e.payload for e in theirs] == [b"theirs"]  # another tenant's run is untouched


def test_sealed_and_checksummed(url: str) -> None:
    keys = StaticKeys({"t1": {"k1": os.urandom(32)}}, {"t1": "k1"})
    sealed = wayline.connect(url, keys=keys)
    try:
        token = held(sealed)
        sealed.append_stream_events("t1", "r1", token, [ev(0, MARKER)])
        rows = [row for table, row in stored_rows(sealed) if table == "stream_events"]
        assert len(rows) == 1 and MARKER not in rows[0]  # sealed at rest
        (back,) = sealed.load_stream_events("t1", "r1", after_seq=0, after_step=-1, to_step=0)
        assert back.payload == MARKER
        count, problems = sealed.check_rows("t1", "r1")
        assert problems == [] and count >= 1
    finally:
        sealed.close()


def test_a_row_read_as_another_is_caught(store: Store) -> None:
    token = held(store)
    store.append_stream_events("t1", "r1", token, [ev(0, b"abcdef")])
    (row,) = store._read_dicts(  # type: ignore[attr-defined]
        "SELECT seq, payload, crc FROM stream_events", ()
    )
    payloads = store.payloads  # type: ignore[attr-defined]
    ident = ("stream_events", "t1", "r1", int(row["seq"]))
    assert payloads.get(ident, "t1", "r1|v", row["payload"], row["crc"]) == b"abcdef"
    moved = ("stream_events", "t1", "r1", int(row["seq"]) + 1)  # the checksum covers the key
    with pytest.raises(CorruptionError):
        payloads.get(moved, "t1", "r1|v", row["payload"], row["crc"])


def test_last_event_of_a_mode_is_the_latest_mark(store: Store) -> None:
    """A worker taking a run over reads the last attempt mark to record what was asked."""
    token = held(store)
    assert store.last_stream_event("t1", "r1", "__attempt__") is None
    mark = StreamEvent(0, "", "__attempt__", b"first")
    store.append_stream_events("t1", "r1", token, [mark, ev(0, b"p0")])
    store.append_stream_events("t1", "r1", token, [StreamEvent(1, "", "__attempt__", b"second")])
    store.append_stream_events("t1", "r1", token, [ev(1, b"p1")])
    last = store.last_stream_event("t1", "r1", "__attempt__")
    assert last is not None and (last.step, last.payload, last.seq) == (1, b"second", 3)
    assert store.last_stream_event("t2", "r1", "__attempt__") is None  # another tenant's
