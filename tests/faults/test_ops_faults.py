"""Operational faults an operator meets: a full disk. Each is refused with a typed error
that says what to do, and no committed step is lost."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.errors import StepLimitError, StoreFullError


class Log(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int


def growing(until: int) -> StateGraph:
    """Each step appends ~4 KB: the database grows by pages every commit."""
    g = StateGraph(Log, name="growing")
    g.add_node("add", lambda s: {"log": [f"{s['n']:04d}" * 1000], "n": s["n"] + 1})
    g.add_edge(START, "add")
    g.add_conditional_edges("add", lambda s: "add" if s["n"] < until else END)
    return g


def test_a_full_disk_is_a_typed_error_and_committed_steps_stay(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'full.db'}"
    store = wayline.connect(url)
    app = growing(until=20).compile(store)
    cfg: dict[str, Any] = {"configurable": {"thread_id": "r"}}
    with pytest.raises(StepLimitError):
        app.invoke({"log": [], "n": 0}, {**cfg, "recursion_limit": 6})
    committed = app.get_state(cfg).values
    step = store.get_run("default", "r").step  # type: ignore[union-attr]
    assert committed["n"] == 6

    # The database may not grow (SQLITE_FULL: what a full disk returns to every write).
    db = store._db  # type: ignore[attr-defined]
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreFullError, match=r"full.*committed before it is intact") as full:
        app.invoke(None, cfg)
    assert "cannot rollback" not in str(full.value)
    # Every committed step is readable, and the run's step did not move backwards.
    assert app.get_state(cfg).values == committed
    run = store.get_run("default", "r")
    assert run is not None and run.step == step
    assert run.error is not None and run.error.startswith("StoreFullError")  # visible
    other = wayline.connect(url)  # a fresh process's view
    assert other.get_run("default", "r").step == step  # type: ignore[union-attr]

    # Space is back: the run continues from its last committed step, as if nothing happened.
    db.execute("PRAGMA max_page_count = 1073741823")
    final = app.invoke(None, cfg)
    assert final["n"] == 20 and final["log"] == [f"{i:04d}" * 1000 for i in range(20)]
