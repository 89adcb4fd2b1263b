"""What starting a run costs: created leased, so no claim transaction of its own."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from wayline import END, START, StateGraph, connect
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
