"""A worker given a data policy applies it: a finished run's class past its retention is
redacted by the worker's periodic task, with no command run by hand."""

from __future__ import annotations

import operator
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import wayline
from wayline import END, START, Classified, DataPolicy, Redacted, Retain, StateGraph


class State(TypedDict):
    msgs: Annotated[list[str], operator.add, Classified("pii")]
    n: int


def build(store: wayline.Store) -> wayline.CompiledGraph:
    g = StateGraph(State)
    g.add_node("step", lambda s: {"msgs": ["PII-77ab"], "n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g.compile(store, name="pii-graph", version="1")


def test_a_worker_applies_its_data_policy(tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'w.db'}")
    app = build(store)
    client = wayline.Wayline(store)
    run_id = client.start(app, {"msgs": [], "n": 0}, subject="carol")
    policy = DataPolicy({"pii": Retain(days=0, then="redact")})
    config = wayline.WorkerConfig(poll_interval=0.05, data_policy=policy, policy_every=0.05)
    worker = wayline.Worker(store, app, config)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while "pii" not in client.get(run_id).redacted:
            assert time.monotonic() < deadline, "the worker never applied the policy"
            time.sleep(0.02)
    finally:
        worker.stop()
        thread.join(timeout=30)
    run = client.get(run_id)
    assert run.status == "done" and run.subject == "carol"
    values: dict[str, Any] = app.get_state({"configurable": {"thread_id": run_id}}).values
    assert isinstance(values["msgs"], Redacted) and values["n"] == 1
    assert [a.action for a in client.audit(run_id)] == ["redact"]
