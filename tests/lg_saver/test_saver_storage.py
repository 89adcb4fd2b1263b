"""What WaylineSaver stores, and what wayline's store gives a LangGraph thread: flat
deltas with bounded reads (by counts of bytes and rows), old checkpoints reading their old
values, tenants apart, encryption at rest, no pickle on the read path, the meter, export,
purge, and the extended deletes keeping what remains readable."""

from __future__ import annotations

import dataclasses
import math
import operator
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

import wayline
from wayline.client import Wayline
from wayline.errors import CodecError, CorruptionError, KeysRequiredError
from wayline.instrument import byte_report
from wayline.langgraph import WaylineSaver
from wayline.store.base import Store
from wayline.store.encrypted import StaticKeys

ITEM = 500
RUN_TAIL = "-1111-1111-1111-111111111111"


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int


def item(i: int) -> str:
    return (f"{i:05d}-" * 100)[:ITEM]


def growing(saver: WaylineSaver, steps: int) -> Any:
    def step(state: State) -> dict[str, Any]:
        return {"log": [item(state["n"])], "n": state["n"] + 1}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < steps else END)
    return g.compile(checkpointer=saver)


def cfg(thread: str = "t", **extra: Any) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, **extra}, "recursion_limit": 10_000}


def test_a_growing_list_is_stored_flat_and_every_checkpoint_reads_its_own_value(
    store: Store,
) -> None:
    steps, ratio, min_full = 240, 2.0, 4_096
    saver = WaylineSaver(store, full_copy_ratio=ratio, min_full_copy_bytes=min_full)
    out = growing(saver, steps).invoke({"log": [], "n": 0}, cfg(), durability="sync")
    assert out["log"] == [item(i) for i in range(steps)]

    report = byte_report(store, "default", "t")
    per_step = report.by_step()
    half = steps // 2
    first = sum(per_step.get(s, 0) for s in range(1, half)) / (half - 1)
    second = sum(per_step.get(s, 0) for s in range(half, steps)) / (steps - half)
    assert second / first < 1.5  # flat: no term grows with the list
    assert report.write_amplification < 3.0
    # The item is stored once per step: as the task's write, the value refers to it.
    log_values = report.by_channel()[("lg_values", "log")]
    assert log_values < (1 + 1 / ratio) * steps * ITEM + steps * 16

    # Bounded reads: the chain of the newest version holds at most (1 + ratio) times what a
    # full copy (at least min_full) holds, and the full copies grow geometrically.
    fresh = WaylineSaver(store)
    head = fresh.get_tuple(cfg())
    assert head is not None
    version = str(head.checkpoint["channel_versions"]["log"])
    row = store.lg_load_value("default", "t", "", "log", version)
    assert row is not None and row.base is not None
    chain = store.lg_load_chain("default", "t", "", "log", row.root)
    root = next(v for v in chain if v.version == row.root)
    by_ref = {v.writes_of for v in chain if v.writes_of}
    refs = store.lg_load_channel_writes("default", "t", "", "log", sorted(by_ref))
    read = sum(len(v.payload) for v in chain if v is not root) + sum(len(w.payload) for w in refs)
    assert read <= ratio * max(len(root.payload), min_full) + ITEM + 16
    thread = store.lg_thread_rows("default", "t")
    fulls = [v for v in thread.values if v.channel == "log" and v.base is None]
    assert len(fulls) <= 2 + math.log(steps * ITEM / min_full, 1 + ratio)

    # Every checkpoint, read by a process that cached nothing, has its own value.
    app = growing(WaylineSaver(store), steps)
    seen = 0
    for snap in app.get_state_history(cfg()):
        if "n" in snap.values:
            assert snap.values["log"] == [item(i) for i in range(snap.values["n"])]
            seen += 1
    assert seen == steps + 1


def test_tenants_are_apart(store: Store) -> None:
    saver = WaylineSaver(store)
    growing(saver, 3).invoke({"log": [], "n": 0}, cfg(tenant="a"))
    growing(saver, 5).invoke({"log": [], "n": 0}, cfg(tenant="b"))
    a, b = saver.get_tuple(cfg(tenant="a")), saver.get_tuple(cfg(tenant="b"))
    assert a is not None and b is not None
    assert len(a.checkpoint["channel_values"]["log"]) == 3
    assert len(b.checkpoint["channel_values"]["log"]) == 5
    assert saver.get_tuple(cfg()) is None  # the default tenant has no thread "t"
    only_a = {t.checkpoint["id"] for t in saver.list({"configurable": {"tenant": "a"}})}
    assert only_a and only_a.isdisjoint(t.checkpoint["id"] for t in saver.list(cfg(tenant="b")))
    assert store.get_run("a", "t") is not None and store.get_run("default", "t") is None
    WaylineSaver(store, tenant="a").delete_thread("t")
    assert saver.get_tuple(cfg(tenant="a")) is None
    assert saver.get_tuple(cfg(tenant="b")) is not None


def test_meter_export_and_purge_cover_a_thread(store: Store) -> None:
    saver = WaylineSaver(store)
    growing(saver, 4).invoke({"log": [], "n": 0}, cfg())
    tables = byte_report(store, "default", "t").by_table()
    assert set(tables) == {"lg_checkpoints", "lg_values", "lg_writes"}
    held = store.held_bytes("default", "t")
    assert all(held[t] == tables[t] for t in tables)  # nothing was rewritten

    exported = Wayline(store).export("t")
    assert exported["lg_checkpoints"] and exported["lg_writes"]
    written = [w["payload"] for w in exported["lg_writes"] if w["channel"] == "log"]
    assert all([item(i)] in written for i in range(4))

    assert Wayline(store).purge("t") > 0
    assert set(store.held_bytes("default", "t").values()) == {0}
    assert saver.get_tuple(cfg()) is None and store.get_run("default", "t") is None


def test_runs_bytes_command_reads_a_langgraph_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lg.db'}"
    with WaylineSaver.from_url(url) as saver:
        growing(saver, 20).invoke({"log": [], "n": 0}, cfg("chat-9"))
    done = subprocess.run(
        [sys.executable, "-m", "wayline.cli.main", "runs", "bytes", "chat-9", "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lg_values" in done.stdout and "lg_writes" in done.stdout
    amp = float(done.stdout.split("write amplification")[1].split()[0])
    assert 1.0 < amp < 3.0
    verified = subprocess.run(
        [sys.executable, "-m", "wayline.cli.main", "runs", "verify", "chat-9", "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "intact" in verified.stdout


def test_payloads_are_sealed_at_rest(tmp_path: Path) -> None:
    from stored_rows import stored_rows

    keys = StaticKeys({"default": {"k1": b"\x01" * 32}}, {"default": "k1"})
    url = f"sqlite:///{tmp_path / 'lg.db'}"
    with WaylineSaver.from_url(url, keys=keys) as saver:
        growing(saver, 6).invoke({"log": [], "n": 0}, cfg())
        tup = saver.get_tuple(cfg())
        assert tup is not None and tup.checkpoint["channel_values"]["log"][-1] == item(5)
        rows = stored_rows(saver.store)
    assert any(t == "lg_values" for t, _ in rows) and any(t == "lg_writes" for t, _ in rows)
    assert not any(item(3)[:40].encode() in data for _, data in rows)
    with pytest.raises(KeysRequiredError):
        WaylineSaver.from_url(url)  # refused, not misread
    other = StaticKeys({"default": {"k2": b"\x02" * 32}}, {"default": "k2"})
    with WaylineSaver.from_url(url, keys=other) as wrong, pytest.raises(CodecError):
        wrong.get_tuple(cfg())


@dataclasses.dataclass
class Point:
    x: int


class Boom:
    def __reduce__(self) -> Any:
        return (os.system, ("touch pwned",))


def test_no_pickle_and_user_types_only_when_allowed(store: Store, tmp_path: Path) -> None:
    plain = WaylineSaver(store)
    conf = cfg("types")
    checkpoint = {
        "v": 4,
        "id": "1",
        "ts": "",
        "channel_values": {"p": Point(3)},
        "channel_versions": {"p": 1},
        "versions_seen": {},
        "updated_channels": None,
    }
    plain.put(conf, checkpoint, {"source": "input", "step": -1}, {"p": 1})  # type: ignore[arg-type]
    got = plain.get_tuple(conf)
    assert got is not None and got.checkpoint["channel_values"]["p"] == {"x": 3}  # not built
    allowed = WaylineSaver(store, allowed_modules=[(__name__, "Point")])
    got = allowed.get_tuple(conf)
    assert got is not None and got.checkpoint["channel_values"]["p"] == Point(3)

    import pickle

    with pytest.raises(TypeError):  # the serializer never falls back to pickle on write
        plain.put_writes({"configurable": {**conf["configurable"], "checkpoint_id": "1"}},
                         [("p", object())], "task")  # fmt: skip
    row = store.lg_load_value("default", "types", "", "p", "1")
    assert row is not None
    tampered = dataclasses.replace(row, version="2", payload=b"pickle\x00" + pickle.dumps(Boom()))
    first = store.lg_get_checkpoint("default", "types", "", "1")
    assert first is not None
    store.lg_put("default", "types", dataclasses.replace(first, checkpoint_id="2"), [tampered])
    checkpoint2 = {**checkpoint, "id": "2", "channel_versions": {"p": 2}}
    plain.put(conf, checkpoint2, {"source": "loop", "step": 0}, {})  # type: ignore[arg-type]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(CodecError, match="never pickle"):
            plain.get_tuple({"configurable": {**conf["configurable"], "checkpoint_id": "2"}})
    finally:
        os.chdir(cwd)
    assert not (tmp_path / "pwned").exists()


def test_delete_for_runs_and_prune_keep_the_rest_readable(store: Store) -> None:
    saver = WaylineSaver(store, min_full_copy_bytes=1)  # full copies early: longer chains
    app = growing(saver, 6)
    app.invoke({"log": [], "n": 0}, cfg(run_id="11111111-1111-1111-1111-111111111111"))
    app = growing(saver, 12)
    app.invoke({"log": [], "n": 6}, cfg(run_id="22222222-2222-2222-2222-222222222222"))
    # the second run's values build on the first run's versions, some stored by reference
    # to the first run's writes: deleting that run must not break them
    first = [c for _, _, c in store.lg_checkpoints_of_runs("default", ["1" * 8 + RUN_TAIL])]
    assert len(first) == 8 and store.lg_values_over_writes("default", "t", "", first)
    saver.delete_for_runs(["11111111-1111-1111-1111-111111111111"])
    assert store.lg_checkpoints_of_runs("default", ["1" * 8 + RUN_TAIL]) == []
    fresh = WaylineSaver(store)
    runs = {t.metadata.get("run_id") for t in fresh.list({"configurable": {"thread_id": "t"}})}
    assert runs == {"22222222-2222-2222-2222-222222222222"}
    head = fresh.get_tuple(cfg())
    assert head is not None
    want = [item(i) for i in range(6)] + [item(i) for i in range(6, 12)]
    assert head.checkpoint["channel_values"]["log"] == want

    saver.prune(["t"], strategy="keep_latest")
    assert [t.checkpoint["id"] for t in fresh.list(cfg())] == [head.checkpoint["id"]]
    again = WaylineSaver(store).get_tuple(cfg())
    assert again is not None and again.checkpoint["channel_values"]["log"] == want
    values = store.lg_thread_rows("default", "t").values
    assert all(v.base is None and v.writes_of is None for v in values)  # all full copies
    app.invoke({"log": [item(99)], "n": 11}, cfg())  # and the thread goes on from there
    last = WaylineSaver(store).get_tuple(cfg())
    assert last is not None and last.checkpoint["channel_values"]["log"][-2:] == [
        item(99),
        item(11),
    ]


def test_messages_round_trip_by_reference(store: Store) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph.message import MessagesState

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    g = StateGraph(MessagesState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_conditional_edges("reply", lambda s: "reply" if len(s["messages"]) < 8 else END)
    out = g.compile(checkpointer=WaylineSaver(store)).invoke(
        {"messages": [HumanMessage("hi")]}, cfg()
    )
    head = WaylineSaver(store).get_tuple(cfg())
    assert head is not None and head.checkpoint["channel_values"]["messages"] == out["messages"]
    values = store.lg_thread_rows("default", "t").values
    assert any(v.channel == "messages" and v.writes_of for v in values)


def stamp(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for d in new:  # changes the written objects after the task's write was stored
        d["seen"] = len(old)
    return old + new


class Stamped(TypedDict):
    log: Annotated[list[dict[str, Any]], stamp]
    n: int


def test_a_reducer_that_changes_written_objects_reads_back_what_the_channel_held(
    store: Store,
) -> None:
    def step(state: Stamped) -> dict[str, Any]:
        return {"log": [{"i": state["n"]}], "n": state["n"] + 1}

    g = StateGraph(Stamped)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 8 else END)
    out = g.compile(checkpointer=WaylineSaver(store)).invoke({"log": [], "n": 0}, cfg())
    assert out["log"][3] == {"i": 3, "seen": 3}
    head = WaylineSaver(store).get_tuple(cfg())
    assert head is not None and head.checkpoint["channel_values"]["log"] == out["log"]


def test_a_fork_reads_its_own_values_and_the_original_keeps_its_own(store: Store) -> None:
    """Time travel: a write to an old checkpoint forks the thread. The fork's new channel
    versions must not collide with the original branch's (LangGraph's int versions would:
    the saver makes versions unique per fork)."""
    saver = WaylineSaver(store)
    app = growing(saver, 5)
    app.invoke({"log": [], "n": 0}, cfg())
    history = list(app.get_state_history(cfg()))
    at_two = next(h for h in history if h.values.get("n") == 2)
    forked = app.update_state(at_two.config, {"log": ["forked"], "n": 5})
    fresh = growing(WaylineSaver(store), 5)
    assert fresh.get_state(forked).values["log"] == [item(0), item(1), "forked"]
    original = next(h for h in history if h.values.get("n") == 3)
    assert fresh.get_state(original.config).values["log"] == [item(i) for i in range(3)]
    assert fresh.get_state(cfg()).values["log"] == [item(0), item(1), "forked"]  # newest


def test_a_damaged_row_is_reported_not_read(tmp_path: Path) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'lg.db'}"
    store = wayline.connect(url)
    growing(WaylineSaver(store), 6).invoke({"log": [], "n": 0}, cfg())
    assert store.check_rows("default", "t")[1] == []
    raw = sqlite3.connect(tmp_path / "lg.db")
    (version, payload) = raw.execute(
        "SELECT version, payload FROM lg_values WHERE channel = 'log' AND base IS NULL "
        "ORDER BY version DESC LIMIT 1"
    ).fetchone()
    damaged = bytes(payload[:-1]) + bytes([payload[-1] ^ 0x01])
    raw.execute("UPDATE lg_values SET payload = ? WHERE version = ?", (damaged, version))
    raw.commit()
    raw.close()
    with pytest.raises(CorruptionError, match="lg_values"):
        WaylineSaver(store).get_tuple(cfg())
    checked, problems = store.check_rows("default", "t")
    assert checked > 0 and [p for p in problems if "lg_values" in str(p)]
    store.close()


def test_list_narrows_to_a_checkpoint_id_as_langgraph_savers_do(store: Store) -> None:
    saver = WaylineSaver(store)
    growing(saver, 4).invoke({"log": [], "n": 0}, cfg())
    ids = [t.checkpoint["id"] for t in saver.list(cfg())]
    assert len(ids) == 6 and ids == sorted(ids, reverse=True)
    [one] = saver.list(cfg(checkpoint_id=ids[2], checkpoint_ns=""))
    assert one.checkpoint["id"] == ids[2]
    assert len(one.checkpoint["channel_values"]["log"]) == 2
