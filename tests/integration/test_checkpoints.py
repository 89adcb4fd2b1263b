"""Exact reconstruction: what a fresh process reads back is the state that ran, for
reducers whose result depends on batching too; verify catches a run that would not."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, Send, StateGraph
from wayline.errors import ReplayDivergenceError
from wayline.instrument import byte_report


def dedupe_per_call(old: list[str], new: list[str]) -> list[str]:
    """Drops items already in ``new``'s own batch: batching-sensitive by design (the
    reducer with which LangGraph's delta channel reconstructed 13 items out of 25)."""
    seen: set[str] = set()
    out = list(old)
    for item in new:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def keep_last_3(old: list[int], new: list[int]) -> list[int]:
    return (old + new)[-3:]


class State(TypedDict):
    tags: Annotated[list[str], dedupe_per_call]
    recent: Annotated[list[int], keep_last_3]
    log: Annotated[list[str], operator.add]
    n: int


def build(url: str, steps: int, snapshot_every: int, **kw: Any) -> Any:
    def fan(s: State) -> Any:
        return [Send("tagger", {"i": s["n"], "k": k}) for k in range(3)]

    def tagger(arg: dict[str, int]) -> dict[str, Any]:
        return {"tags": ["x", "y", "x"][: 1 + arg["k"]], "recent": [arg["i"] * 10 + arg["k"]]}

    def count(s: State) -> dict[str, Any]:
        return {"n": s["n"] + 1, "log": [f"step {s['n']}"]}

    g = StateGraph(State)
    g.add_node("count", count)
    g.add_node("tagger", tagger)
    g.add_edge(START, "count")
    g.add_conditional_edges("count", lambda s: fan(s) if s["n"] < steps else END)
    g.add_edge("tagger", "count")
    return g.compile(wayline.connect(url), snapshot_every=snapshot_every, **kw)


@pytest.mark.parametrize("snapshot_every", [1, 3, 5, 100])
def test_batching_sensitive_reducers_reconstruct_exactly(
    tmp_path: Path, snapshot_every: int
) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    cfg = {"configurable": {"thread_id": "r"}}
    live = build(url, 12, snapshot_every).invoke({"n": 0, "tags": [], "recent": [], "log": []}, cfg)
    assert len(live["tags"]) == 11 * 5  # 11 fan-outs; calls write 1, 2, 3 tags, 1+2+2 kept
    fresh = build(url, 12, snapshot_every)  # a new connection and a new compiled graph
    state = fresh.get_state(cfg)
    assert state.values == live
    assert state.read_info.replayed_steps <= snapshot_every
    result = fresh.verify(cfg)
    assert result.ok and result.folds <= snapshot_every


def test_history_reconstructs_every_step(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    cfg = {"configurable": {"thread_id": "h"}}
    app = build(url, 5, 2)
    start = {"n": 0, "tags": [], "recent": [], "log": []}
    # one chunk per committed step (a step that writes nothing sends no "values" chunk)
    seen = [c["values"] for c in app.stream(start, cfg, stream_mode="checkpoints")]
    history = list(build(url, 5, 2).get_state_history(cfg))
    assert [h.values for h in reversed(history)] == seen


def test_in_place_mutation_is_caught_by_verify(tmp_path: Path) -> None:
    class S(TypedDict):
        log: Annotated[list[int], operator.add]
        n: int

    def sneaky(s: S) -> dict[str, Any]:
        s["log"].append(-1)  # mutates the live state behind the reducer's back
        return {"log": [s["n"]], "n": s["n"] + 1}

    g = StateGraph(S)
    g.add_node("sneaky", sneaky)
    g.add_edge(START, "sneaky")
    g.add_conditional_edges("sneaky", lambda s: "sneaky" if s["n"] < 4 else END)
    url = f"sqlite:///{tmp_path / 'v.db'}"
    app = g.compile(url, verify_sample=1.0)
    with pytest.raises(ReplayDivergenceError, match="mutate its input state in place"):
        app.invoke({"log": [], "n": 0}, {"configurable": {"thread_id": "v"}})
    result = g.compile(url).verify({"configurable": {"thread_id": "v"}})
    assert not result.ok and result.expected != result.actual


def test_large_values_are_stored_once_by_reference(tmp_path: Path) -> None:
    class S(TypedDict):
        doc: str
        n: int

    doc = "lorem ipsum " * 20_000  # ~240 KB, above the 64 KiB default threshold
    g = StateGraph(S)
    g.add_node("read", lambda s: {"doc": doc, "n": s["n"] + 1})
    g.add_edge(START, "read")
    g.add_conditional_edges("read", lambda s: "read" if s["n"] < 6 else END)
    store = wayline.connect(f"sqlite:///{tmp_path / 'b.db'}")
    app = g.compile(store, snapshot_every=2)
    cfg = {"configurable": {"thread_id": "b"}}
    app.invoke({"doc": "", "n": 0}, cfg)
    tables = byte_report(store, "default", "b").by_table()
    assert len(doc) < tables["blobs"] < len(doc) + 16  # one copy for six writes, 3 snapshots
    assert tables["deltas"] < 1_000 and tables["snapshots"] < 1_000
    assert g.compile(store).get_state(cfg).values["doc"] == doc
