"""Hypothesis: for random write sequences, reducers, snapshot intervals and blob thresholds,
the state reconstructed from the store at every step equals the state that ran."""

from __future__ import annotations

import operator
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from wayline import END, START, Send, StateGraph


def cap_last_4(old: list[Any], new: list[Any]) -> list[Any]:
    return (old + new)[-4:]


def dedupe_in_call(old: list[Any], new: list[Any]) -> list[Any]:
    out = list(old)
    for item in dict.fromkeys(new):
        out.append(item)
    return out


class State(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]
    capped: Annotated[list[Any], cap_last_4]
    deduped: Annotated[list[Any], dedupe_in_call]
    best: Annotated[int, max]
    note: str
    i: int


values = st.one_of(
    st.integers(-5, 5),
    st.text(max_size=3),
    st.binary(max_size=300),  # large enough to cross small blob thresholds
    st.tuples(st.integers(0, 3), st.text(max_size=2)),
)
task_writes = st.fixed_dictionaries(
    {},
    optional={
        "log": st.lists(values, max_size=3),
        "capped": st.lists(values, max_size=3),
        "deduped": st.lists(st.integers(0, 3), max_size=4),
        "best": st.integers(-100, 100),
    },
)
# A step is 1-3 parallel tasks; only the first may write the last-value key ``note``.
steps = st.lists(
    st.tuples(
        st.lists(task_writes, min_size=1, max_size=3), st.one_of(st.none(), st.text(max_size=4))
    ),
    min_size=1,
    max_size=25,
)


def build(url: str, script: list[Any], snapshot_every: int, threshold: int) -> Any:
    def plan(s: State) -> Any:
        i = s["i"]
        if i >= len(script):
            return END
        tasks, _ = script[i]
        return [Send("task", {"i": i, "k": k}) for k in range(len(tasks))]

    def task(arg: dict[str, int]) -> dict[str, Any]:
        tasks, note = script[arg["i"]]
        update = dict(tasks[arg["k"]])
        if arg["k"] == 0 and note is not None:
            update["note"] = note
        return update

    def tick(s: State) -> dict[str, Any]:
        return {"i": s["i"] + 1}

    g = StateGraph(State)
    g.add_node("tick", tick)
    g.add_node("task", task)
    g.add_conditional_edges(START, plan)
    g.add_edge("task", "tick")
    g.add_conditional_edges("tick", plan)
    return g.compile(url, snapshot_every=snapshot_every, blob_threshold=threshold)


@settings(max_examples=25, deadline=None)
@given(script=steps, snapshot_every=st.integers(1, 10), threshold=st.sampled_from([64, 256, 65536]))
def test_reconstruction_equals_execution_at_every_step(
    script: list[Any], snapshot_every: int, threshold: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'p.db'}"
        cfg = {"configurable": {"thread_id": "p"}}
        app = build(url, script, snapshot_every, threshold)
        # one chunk per committed step (a step that writes nothing sends no "values" chunk),
        # after the input checkpoint (the state before the input), as LangGraph's
        live = list(app.stream({"i": 0}, cfg, stream_mode="checkpoints"))
        assert [c["metadata"]["step"] for c in live] == list(range(-1, len(live) - 1))
        reader = build(url, script, snapshot_every, threshold)  # fresh connection and graph
        for step, chunk in enumerate(live[1:]):
            snap = reader.get_state({"configurable": {"thread_id": "p", "step": step}})
            assert snap.values == chunk["values"], f"step {step}"
            assert snap.read_info.replayed_steps <= snapshot_every
        for chunk in live:  # each checkpoint's config addresses it
            assert reader.get_state(chunk["config"]).values == chunk["values"]
        assert reader.verify(cfg).ok
