"""What starting a run costs: created leased, so no claim transaction of its own."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from wayline import END, START, StateGraph, connect
from wayline.client import Wayline
from wayline.store.base import Store


class S(TypedDict):
    n: int


def _app(store: Store) -> Any:
    g = StateGraph(S)
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    return g.compile(store)


def test_a_new_run_takes_no_claim_and_a_resume_takes_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = connect("sqlite:///:memory:")
    claims: list[str] = []
    claim = store.claim

    def counted(tenant_id: str, run_id: str, **kw: Any) -> int:
        claims.append(run_id)
        return claim(tenant_id, run_id, **kw)

    monkeypatch.setattr(store, "claim", counted)
    app = _app(store)
    cfg = {"configurable": {"thread_id": "t1"}}
    assert app.invoke({"n": 0}, cfg) == {"n": 1}
    run = store.get_run("default", "t1")
    assert claims == [] and run is not None and run.fencing_token == 1
    assert run.lease_owner is None  # released when it settled
    assert app.invoke({"n": 5}, cfg) == {"n": 6}  # an existing run is claimed as before
    run = store.get_run("default", "t1")
    assert claims == ["t1"] and run is not None and run.fencing_token == 2


def test_a_new_run_rides_on_its_first_durable_commit(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite with synchronous=FULL the row of a run born claimed is inserted with
    synchronous=NORMAL (no fsync of its own): the input step's commit, fsync'd, makes it
    durable with it. A queued start (``enqueue``) stays durable on its own."""
    url = f"sqlite:///{tmp_path / 'start.db'}"
    store = connect(url)
    modes: dict[str, int] = {}  # run id -> PRAGMA synchronous when its row went in
    insert = store._insert_run  # type: ignore[attr-defined]

    def observed(db: Any, tenant_id: str, run_id: str, *a: Any, **kw: Any) -> Any:
        modes[run_id] = db.execute("PRAGMA synchronous").fetchone()[0]
        return insert(db, tenant_id, run_id, *a, **kw)

    monkeypatch.setattr(store, "_insert_run", observed)
    app = _app(store)
    assert app.invoke({"n": 0}, {"configurable": {"thread_id": "fresh"}}) == {"n": 1}
    Wayline(store).start(app, {"n": 0}, run_id="queued")
    assert modes == {"fresh": 1, "queued": 2}  # NORMAL, FULL
    run = connect(url).get_run("default", "fresh")  # another connection sees it all
    assert run is not None and run.status == "done" and run.step == 1
