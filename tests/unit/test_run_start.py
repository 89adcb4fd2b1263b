"""What starting a run costs: created leased, so no claim transaction of its own."""

from __future__ import annotations

import re
from typing import Any, TypedDict

import pytest

from wayline import END, START, Command, StateGraph, connect
from wayline.client import Wayline
from wayline.errors import ConfigError, ResumeError
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


def test_a_new_run_goes_in_with_its_input_in_one_transaction(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row of a run that ``invoke`` starts is inserted by the commit of its input step
    (one transaction, one fsync, no row without its input); a queued start (``enqueue``)
    creates its row durably on its own, as a worker must find it."""
    url = f"sqlite:///{tmp_path / 'start.db'}"
    store = connect(url)
    inserted: dict[str, bool] = {}  # run id -> inserted inside a commit
    transactions: list[str] = []
    committing = False
    insert, commit, tx = store._insert_run, store.commit, store._tx  # type: ignore[attr-defined]

    def observed(db: Any, tenant_id: str, run_id: str, *a: Any, **kw: Any) -> Any:
        inserted[run_id] = committing
        return insert(db, tenant_id, run_id, *a, **kw)

    def counted_commit(*a: Any) -> None:
        nonlocal committing
        committing = True
        try:
            commit(*a)
        finally:
            committing = False

    def counted_tx(*a: Any, **kw: Any) -> Any:
        transactions.append("tx")
        return tx(*a, **kw)

    monkeypatch.setattr(store, "_insert_run", observed)
    monkeypatch.setattr(store, "commit", counted_commit)
    monkeypatch.setattr(store, "_tx", counted_tx)
    app = _app(store)
    assert app.invoke({"n": 0}, {"configurable": {"thread_id": "fresh"}}) == {"n": 1}
    assert inserted == {"fresh": True}
    assert len(transactions) == 2  # the input step with the row, the node's step
    Wayline(store).start(app, {"n": 0}, run_id="queued")
    assert inserted == {"fresh": True, "queued": False}
    run = connect(url).get_run("default", "fresh")  # another connection sees it all
    assert run is not None and run.status == "done" and run.step == 1 and run.fencing_token == 1


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_run_started_elsewhere_first_is_continued_not_created(
    monkeypatch: pytest.MonkeyPatch, durability: str
) -> None:
    """Two processes start the same thread at once: the one whose input commits second
    finds the row there (RunExistsError inside its commit, nothing written) and continues
    the run as an existing one: it takes the lease over and its input is the next step."""
    store = connect("sqlite:///:memory:")
    app = _app(store)
    cfg = {"configurable": {"thread_id": "t"}}
    get_run = store.get_run
    raced: list[bool] = []

    def late_read(tenant_id: str, run_id: str) -> Any:
        run = get_run(tenant_id, run_id)
        if run is None and not raced:  # the other process starts it between read and commit
            raced.append(True)
            assert app.invoke({"n": 10}, cfg) == {"n": 11}
        return run

    monkeypatch.setattr(store, "get_run", late_read)
    assert app.invoke({"n": 0}, cfg, durability=durability) == {"n": 1}
    run = get_run("default", "t")
    assert raced and run is not None and run.status == "done"
    assert run.step == 3 and run.fencing_token == 2  # two inputs, two steps; claimed again
    assert [s.values for s in app.get_state_history(cfg)][::-1] == [
        {},  # each input has its input checkpoint first, as LangGraph's
        {"n": 10},
        {"n": 11},
        {"n": 11},
        {"n": 0},
        {"n": 1},
    ]


def test_a_start_refused_before_its_input_commits_leaves_no_row() -> None:
    """A resume of a thread that never ran has no question to answer: refused, with no
    row written (it would be a run with no input that nothing could continue)."""
    store = connect("sqlite:///:memory:")
    app = _app(store)
    cfg = {"configurable": {"thread_id": "never"}}
    with pytest.raises(ResumeError, match="no pending interrupt"):
        app.invoke(Command(resume="yes", update={"n": 1}), cfg)
    assert store.get_run("default", "never") is None
    assert app.invoke({"n": 0}, cfg) == {"n": 1}  # the thread starts as a new one


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ("my-thread", "config must be a dict"),
        ({"configurable": ["my-thread"]}, "config['configurable'] must be a dict"),
        ({"configurable": {"thread_id": "t"}, "recursion_limit": "50"}, "recursion_limit"),
        ({"configurable": {"thread_id": "t"}, "recursion_limit": [50]}, "recursion_limit"),
    ],
)
def test_a_malformed_config_is_a_config_error_before_anything_is_written(
    config: Any, says: str
) -> None:
    store = connect("sqlite:///:memory:")
    app = _app(store)
    for call in (
        lambda: app.invoke({"n": 0}, config),
        lambda: list(app.stream({"n": 0}, config)),
        lambda: app.get_state(config),
    ):
        with pytest.raises(ConfigError, match=re.escape(says)):
            call()
    assert store.list_runs("default") == []


@pytest.mark.parametrize("run_id", ["", 5])
def test_a_start_with_a_run_id_that_is_not_a_name_queues_nothing(run_id: Any) -> None:
    store = connect("sqlite:///:memory:")
    with pytest.raises(ConfigError, match="run_id must be a non-empty string"):
        Wayline(store).start(_app(store), {"n": 0}, run_id=run_id)
    assert store.list_runs("default") == []


def test_a_recursion_limit_written_as_a_float_is_a_limit_as_in_langgraph() -> None:
    store = connect("sqlite:///:memory:")
    out = _app(store).invoke({"n": 0}, {"configurable": {"thread_id": "f"}, "recursion_limit": 1e4})
    assert out == {"n": 1}


def test_a_checkpoint_id_on_a_new_thread_without_a_checkpointer_is_a_label() -> None:
    """As LangGraph: a graph compiled without a checkpointer has no checkpoints to go back
    to, so a ``checkpoint_id`` a caller passes (a platform's, say) on a new thread is
    ignored; with a checkpointer an id the thread never had is still refused."""
    from wayline.errors import TimeTravelError

    class T(TypedDict):
        n: int

    g = StateGraph(T).add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    labelled = {"configurable": {"thread_id": "th-1", "checkpoint_id": "ckpt-1"}}
    assert g.compile().invoke({"n": 1}, labelled) == {"n": 2}
    with pytest.raises(TimeTravelError, match="not a checkpoint of run"):
        g.compile(connect("sqlite:///:memory:")).invoke({"n": 1}, labelled)
