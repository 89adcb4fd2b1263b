"""Property: whatever happens to a run (steps, crashes, resumes, corrupted rows, restores,
purges of other runs), it never loses a committed step, and a read either gives the state
an uninterrupted run had at that step or raises; it never gives another state.

Hypothesis draws sequences of operations on one run of a deterministic loop (after step
``s`` its state is ``n = s``, ``items = [0 .. s-1]``) whose list is snapshotted every three
steps, in durability sync or async. A crash is a node dying mid-step with an exception no
handler catches (the step in flight is lost, its peers' writes kept); corruption flips a
byte of a delta, snapshot or segment row; restore puts every damaged row back.
"""

from __future__ import annotations

import contextlib
import operator
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from fault_rows import flip_row, restore_row, rows_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wayline
from wayline import END, START, StateGraph
from wayline.client import Wayline
from wayline.errors import CorruptionError, StepLimitError
from wayline.store.base import Store

LAST = 14


class Loop(TypedDict):
    n: int
    items: Annotated[list[int], operator.add]


class Crash(BaseException):
    """A node dying mid-step, as abruptly as Python allows in-process."""


def build(store: Store, crash_at: set[int]) -> Any:
    def step(s: Loop) -> dict[str, Any]:
        if s["n"] in crash_at:
            crash_at.discard(s["n"])
            raise Crash
        return {"n": s["n"] + 1, "items": [s["n"]]}

    g = StateGraph(Loop, name="prop")
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < LAST else END)
    return g.compile(store, snapshot_every=3)


def expected(step: int) -> dict[str, Any]:
    return {"n": step, "items": list(range(step))}


OPS = st.one_of(
    st.tuples(st.just("advance"), st.integers(1, 5)),
    st.tuples(st.just("crash"), st.integers(0, 3)),
    st.tuples(st.just("corrupt"), st.sampled_from(["deltas", "snapshots", "segments"])),
    st.tuples(st.just("restore"), st.just(0)),
    st.tuples(st.just("purge_other"), st.just(0)),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, min_size=1, max_size=12), mode=st.sampled_from(["sync", "async"]))
def test_no_operation_loses_a_step_or_reads_a_wrong_state(
    ops: list[tuple[str, int | str]], mode: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = wayline.connect(f"sqlite:///{Path(tmp) / 'p.db'}")
        crash_at: set[int] = set()
        app = build(store, crash_at)
        cfg = {"configurable": {"thread_id": "p"}}
        with contextlib.suppress(StepLimitError):
            app.invoke({"n": 0, "items": []}, {**cfg, "recursion_limit": 1}, durability=mode)
        damaged: list[tuple[str, dict[str, Any]]] = []
        committed = 0
        for op, arg in ops:
            if op == "advance":
                assert isinstance(arg, int)
                limit_cfg = {**cfg, "recursion_limit": arg}
                with contextlib.suppress(StepLimitError, CorruptionError):
                    app.invoke(None, limit_cfg, durability=mode)
            elif op == "crash":
                assert isinstance(arg, int)
                crash_at.add(committed + arg)
                with contextlib.suppress(Crash, StepLimitError, CorruptionError):
                    app.invoke(None, {**cfg, "recursion_limit": 6}, durability=mode)
                crash_at.clear()
            elif op == "corrupt":
                assert isinstance(arg, str)  # the table to corrupt
                rows = rows_of(store, arg, "p")
                if rows:
                    row = rows[len(rows) // 2]
                    flip_row(store, arg, row)
                    damaged.append((arg, row))
            elif op == "restore":
                for table, row in reversed(damaged):
                    restore_row(store, table, row)
                damaged.clear()
            else:
                other = build(store, set())
                other.invoke({"n": LAST - 1, "items": []}, {"configurable": {"thread_id": "o"}})
                Wayline(store).purge("o")
            run = store.get_run("default", "p")
            assert run is not None
            assert run.step >= committed, "a committed step was lost"
            committed = run.step
            try:
                values = app.get_state(cfg).values
            except CorruptionError:
                assert damaged, "corruption reported where there was none"
                continue
            assert values == expected(committed)  # exact, or it raised
        for table, row in reversed(damaged):
            restore_row(store, table, row)
        final = app.invoke(None, cfg, durability=mode) if committed < LAST else None
        assert app.get_state(cfg).values == expected(LAST)
        if final is not None:
            assert final == expected(LAST)
        store.close()
