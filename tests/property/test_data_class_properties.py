"""Hypothesis: random runs with labelled channels (lists, last values, blobs), on plaintext
and encrypted stores, random subjects, random redactions, subject erasures and policies;
reading any run gives each channel either its exact value or a ``Redacted`` tombstone of
that channel's own class, never another class's data and never a partial value."""

from __future__ import annotations

import operator
import os
from typing import Annotated, Any, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

import wayline
from wayline import END, START, Classified, DataPolicy, Redacted, Retain, StateGraph
from wayline.control.policy import apply_policy
from wayline.store.encrypted import StaticKeys

CLASSES = ("default", "pii", "secret")


class State(TypedDict, total=False):
    chat: Annotated[list[Any], operator.add, Classified("pii")]
    card: Annotated[str, Classified("secret")]
    big: Annotated[bytes, Classified("pii")]
    log: Annotated[list[Any], operator.add]
    note: str
    n: int


CLASS_OF = {"chat": "pii", "card": "secret", "big": "pii", "log": "default", "note": "default"}


def build(store: wayline.Store, snapshot_every: int) -> wayline.CompiledGraph:
    def step(s: State) -> dict[str, Any]:
        n = s["n"]
        out: dict[str, Any] = {"chat": [f"chat-{n}"], "log": [n], "n": n + 1}
        if n % 2 == 0:
            out["card"] = f"card-{n}"
            out["note"] = f"note-{n}"
        return out

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= s["log"][0] else "step")
    return g.compile(store, snapshot_every=snapshot_every, blob_threshold=200)


run_specs = st.lists(
    st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.integers(1, 7), st.booleans()),
    min_size=1,
    max_size=4,
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("redact"), st.integers(0, 3), st.sampled_from(CLASSES)),
        st.tuples(
            st.just("erase"),
            st.sampled_from(["s1", "s2", "s3"]),
            st.sampled_from([None, ("pii",), ("secret",), ("pii", "secret")]),
        ),
        st.tuples(
            st.just("policy"), st.sampled_from(CLASSES), st.sampled_from(["redact", "purge"])
        ),
    ),
    max_size=4,
)


@settings(max_examples=25, deadline=None)
@given(
    runs=run_specs,
    ops=operations,
    snapshot_every=st.integers(1, 4),
    encrypted=st.booleans(),
)
def test_reads_give_the_value_or_a_tombstone_of_its_own_class(
    runs: list[tuple[str, int, bool]],
    ops: list[tuple[Any, ...]],
    snapshot_every: int,
    encrypted: bool,
) -> None:
    keys = StaticKeys({"default": {"k": os.urandom(32)}}, {"default": "k"}) if encrypted else None
    store = wayline.connect("sqlite:///:memory:", keys=keys)
    app = build(store, snapshot_every)
    client = wayline.Wayline(store)
    expected: dict[str, dict[str, Any]] = {}
    subjects: dict[str, str] = {}
    for i, (subject, length, big) in enumerate(runs):
        run_id = f"r{i}"
        first: dict[str, Any] = {"n": 0, "log": [length]}
        if big:
            first["big"] = bytes([i]) * 300  # a blob, shared by runs with the same i: none
        cfg = {"configurable": {"thread_id": run_id, "subject": subject}}
        expected[run_id] = dict(app.invoke(first, cfg))
        subjects[run_id] = subject
    erased: dict[str, set[str]] = {r: set() for r in expected}
    purged: set[str] = set()
    for op in ops:
        if op[0] == "redact":
            run_id = f"r{op[1]}"
            if run_id in expected and run_id not in purged:
                client.redact(run_id, [op[2]])
                erased[run_id].add(op[2])
        elif op[0] == "erase":
            mine = [r for r, s in subjects.items() if s == op[1] and r not in purged]
            client.erase_subject(op[1], classes=op[2])
            for r in mine:
                if op[2] is None:
                    purged.add(r)
                else:
                    erased[r].update(op[2])
        else:
            policy = DataPolicy({op[1]: Retain(days=0, then=op[2])})
            for action in apply_policy(store, policy, now=2e9):
                if action["action"] == "purge":
                    purged.add(action["run_id"])
                else:
                    erased[action["run_id"]].update(action["classes"])
    for run_id, want in expected.items():
        if run_id in purged:
            assert store.get_run("default", run_id) is None
            continue
        got = app.get_state({"configurable": {"thread_id": run_id}}).values
        assert set(got) == set(want)
        for key, value in got.items():
            cls = CLASS_OF.get(key, "default")
            if cls in erased[run_id]:
                assert isinstance(value, Redacted) and value.cls == cls, (run_id, key, value)
            else:
                assert value == want[key], (run_id, key, value)
    store.close()
