"""LangGraph graphs on wayline's workers, on SQLite and PostgreSQL: real ``wayline worker``
processes running LangGraph's own engine on ``WaylineSaver`` (``wayline.langgraph.engine``),
killed with SIGKILL, paused with SIGSTOP.

The graphs are lg_worker_graphs.py's, written as LangGraph programs: ``counter`` runs six
steps and charges through ``wayline.langgraph.effect`` at n == 3; ``approval`` asks with
LangGraph's ``interrupt``; ``greeting`` says which config and context it ran with.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_notifications import SECRET, Receiver
from test_workers import charges, executions
from waiting import wait_until

import wayline
from wayline.client import Wayline
from wayline.codec import default_codec
from wayline.control.approvals import Actor
from wayline.errors import ApprovalRefused
from wayline.graph.checkpoint import encode_inbox
from wayline.langgraph import WaylineSaver
from wayline.langgraph.engine import LangGraphEngine
from wayline.store.base import Store
from wayline.store.metric_samples import metric_samples
from wayline.worker import Worker, WorkerConfig

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import lg_worker_graphs  # noqa: E402

GRAPH = f"{HERE / 'lg_worker_graphs.py'}:counter"
GREETING = f"{HERE / 'lg_worker_graphs.py'}:greeting"
INPUT = {"log": [], "n": 0}
pytestmark = pytest.mark.crash


def spawn(
    procs: list[Any],
    url: str,
    side: Path,
    *,
    lease: float,
    name: str,
    graph: str = GRAPH,
    options: tuple[str, ...] = (),
) -> Any:
    log = open(side / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    cmd = [sys.executable, "-m", "wayline.cli.main", "worker", graph, "--db", url]
    cmd += ["--lease", str(lease), "--poll", "0.05", "--concurrency", "2", *options]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    procs.append(proc)
    wait_until(lambda: b"serving" in (side / f"{name}.log").read_bytes(), f"{name} to start")
    return proc


def state(store: Store, run_id: str) -> dict[str, Any]:
    app = lg_worker_graphs.counter.copy(update={"checkpointer": WaylineSaver(store)})
    return dict(app.get_state({"configurable": {"thread_id": run_id}}).values)


def checkpoints(store: Store, run_id: str) -> list[tuple[str, Any, Any]]:
    """(checkpoint id, owner, token) of every checkpoint of the thread, oldest first."""
    found = WaylineSaver(store).list({"configurable": {"thread_id": run_id}})
    rows = [
        (t.checkpoint["id"], t.metadata.get("wayline_owner"), t.metadata.get("wayline_token"))
        for t in found
    ]
    return rows[::-1]


def without_receipt(values: dict[str, Any]) -> dict[str, Any]:
    """A run's state, less its receipt (named after the run's own idempotency key)."""
    assert values["receipt"].startswith("ch-")
    return {k: v for k, v in values.items() if k != "receipt"}


FINAL = {"log": list(range(lg_worker_graphs.STEPS)), "n": lg_worker_graphs.STEPS}


def test_a_langgraph_graph_queued_with_start_runs_on_wayline_worker(
    url: str, side: Path, procs: list[Any]
) -> None:
    spawn(procs, url, side, lease=10, name="w")
    client = Wayline(url)
    ids = [client.start(lg_worker_graphs.counter, INPUT, run_id=f"r{i}") for i in range(3)]
    store = wayline.connect(url)
    for run_id in ids:
        run = client.wait(run_id, timeout=60)
        assert (run.status, run.engine, run.step) == ("done", "langgraph", 6)
        assert run.lease_owner is None and run.inbox is None
        assert without_receipt(state(store, run_id)) == FINAL
        owners = {owner for _, owner, _ in checkpoints(store, run_id)}
        assert len(owners) == 1 and None not in owners  # written under the worker's lease
    assert set(executions(side).values()) == {1}  # each step of each run once
    assert len(charges(side)) == 3


def test_a_killed_workers_langgraph_run_is_finished_by_another(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "block-k").touch()
    first = spawn(procs, url, side, lease=1.0, name="first")
    client = Wayline(url)
    client.start(lg_worker_graphs.counter, INPUT, run_id="k")
    wait_until(lambda: (side / "reached-k").exists(), "the first worker to reach n == 3")
    first.kill()
    first.wait()
    client.start(lg_worker_graphs.counter, INPUT, run_id="unkilled")
    second = spawn(procs, url, side, lease=1.0, name="second")
    assert client.wait("k", timeout=60).status == "done"
    assert client.wait("unkilled", timeout=60).status == "done"
    store = wayline.connect(url)
    assert without_receipt(state(store, "k")) == without_receipt(state(store, "unkilled"))
    assert without_receipt(state(store, "k")) == FINAL
    counts = executions(side)
    assert counts[("k", 3)] == 2  # the step in flight at the kill ran again
    assert all(c == 1 for (_, n), c in counts.items() if n != 3)  # committed steps did not
    assert charges(side).count(next(c for c in charges(side))) == 1
    assert len(charges(side)) == 2  # one per run: the killed run's charge was recorded
    tokens = [token for _, _, token in checkpoints(store, "k")]
    assert tokens[0] < tokens[-1]  # the takeover wrote under a newer lease
    # its first read of "k" is timed as a recovery (as wayline's engine times it), the new
    # run's start read nothing: the metrics it flushed on stopping say so
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0
    reads: collections.Counter[str] = collections.Counter()
    depth: collections.Counter[str] = collections.Counter()
    for row in metric_samples(store).load("default", 0):
        if row.metric == "wayline.reconstruct.duration":
            reads[dict(row.attrs)["recovery"]] += row.count
            assert dict(row.attrs)["graph"] == "lg_counter"
        if row.metric == "wayline.replay.depth":
            depth[dict(row.attrs)["recovery"]] += row.count
    assert reads == {"true": 1} and depth == {"true": 1}


def test_a_paused_langgraph_worker_past_its_lease_writes_no_checkpoint(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "block-p").touch()
    paused = spawn(procs, url, side, lease=1.0, name="paused")
    client = Wayline(url)
    client.start(lg_worker_graphs.counter, INPUT, run_id="p")
    wait_until(lambda: (side / "reached-p").exists(), "the first worker to reach n == 3")
    paused.send_signal(signal.SIGSTOP)
    spawn(procs, url, side, lease=1.0, name="takeover")
    assert client.wait("p", timeout=60).status == "done"
    store = wayline.connect(url)
    before = checkpoints(store, "p")
    writes_before = store.count_rows("default", "p")
    paused.send_signal(signal.SIGCONT)
    (side / "go-p").touch()  # the paused worker's node returns and LangGraph writes
    wait_until(
        lambda: b"lease on run 'p' lost" in (side / "paused.log").read_bytes(),
        "the paused worker to find its lease lost",
    )
    assert checkpoints(store, "p") == before  # none of its writes landed
    assert store.count_rows("default", "p") == writes_before
    assert without_receipt(state(store, "p")) == FINAL
    assert executions(side)[("p", 3)] == 2 and len(charges(side)) == 1
    (effect,) = store.list_effects("default", "p")
    assert effect.status == "SUCCEEDED"
    paused.send_signal(signal.SIGTERM)
    assert paused.wait(timeout=20) == 0


def test_an_effect_happens_once_across_a_kill_after_the_provider_committed(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "kill-e").touch()
    first = spawn(procs, url, side, lease=1.0, name="first")
    client = Wayline(url)
    client.start(lg_worker_graphs.counter, INPUT, run_id="e")
    assert first.wait(timeout=60) == -signal.SIGKILL  # killed itself after the charge
    spawn(procs, url, side, lease=1.0, name="second")
    assert client.wait("e", timeout=60).status == "done"
    store = wayline.connect(url)
    assert without_receipt(state(store, "e")) == FINAL
    (key,) = charges(side)  # the provider charged once
    (effect,) = store.list_effects("default", "e")
    assert (effect.key, effect.status) == (key, "SUCCEEDED")  # reconciled, not resent
    assert executions(side)[("e", 3)] == 2


def test_an_unknown_outcome_parks_the_run_and_is_not_resent(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "kill-b").touch()
    (side / "blind-b").touch()
    first = spawn(procs, url, side, lease=1.0, name="first")
    client = Wayline(url)
    client.start(lg_worker_graphs.counter, INPUT, run_id="b")
    assert first.wait(timeout=60) == -signal.SIGKILL
    spawn(procs, url, side, lease=1.0, name="second")
    run = wait_until(
        lambda: (r := client.get("b")).status == "parked" and r.lease_owner is None and r,
        "the run to park",
    )
    assert "outcome unknown" in str(run.error)
    assert len(charges(side)) == 1  # neither resent under its key nor under a new one
    (effect,) = wayline.connect(url).list_effects("default", "b")
    assert effect.status in ("EXECUTING", "UNKNOWN")


def in_process_worker(url: str, engine: LangGraphEngine) -> tuple[Worker, threading.Thread]:
    worker = Worker(url, engine, WorkerConfig(poll_interval=0.02, lease_seconds=5))
    thread = threading.Thread(target=worker.run)
    thread.start()
    return worker, thread


def test_an_interrupt_parks_the_run_and_only_an_authorized_actor_resumes_it(
    url: str, side: Path
) -> None:
    engine = LangGraphEngine(lg_worker_graphs.approval, approvers={"review": ["finance"]})
    worker, thread = in_process_worker(url, engine)
    try:
        client = Wayline(url)
        client.start(engine, INPUT, run_id="a")
        run = client.wait("a", timeout=30)
        assert (run.status, run.lease_owner, run.engine) == ("interrupted", None, "langgraph")
        (question,) = client.pending("a")
        assert question.value == {"refund": 10} and question.approvers == ("finance",)
        with pytest.raises(ApprovalRefused, match="may not decide"):
            client.resume("a", "ok", actor=Actor(id="mallory"), digest=question.digest)
        with pytest.raises(ApprovalRefused, match="digest"):
            client.resume("a", "ok", actor=Actor(id="al", roles=("finance",)), digest="0" * 64)
        assert client.get("a").status == "interrupted"  # refusals changed nothing
        client.resume("a", "ok", actor=Actor(id="al", roles=("finance",)), digest=question.digest)
        assert client.wait("a", timeout=30).status == "done"
        app = lg_worker_graphs.approval.copy(update={"checkpointer": WaylineSaver(client.store)})
        final = app.get_state({"configurable": {"thread_id": "a"}}).values
        assert final == {"log": [0, 100], "n": 1, "decision": "ok"}
        audit = collections.Counter((a.actor, a.outcome) for a in client.audit("a"))
        assert audit == {
            ("node:review", "pending"): 1,
            ("mallory", "refused"): 1,
            ("al", "refused"): 1,
            ("al", "accepted"): 1,
        }
    finally:
        worker.stop()
        thread.join()


def test_an_entrypoint_runs_on_a_worker_and_waits_for_its_answer(url: str, side: Path) -> None:
    engine = LangGraphEngine(lg_worker_graphs.doubling)
    worker, thread = in_process_worker(url, engine)
    try:
        client = Wayline(url)
        client.start(lg_worker_graphs.doubling, 21, run_id="fn")
        assert client.wait("fn", timeout=30).status == "interrupted"
        (question,) = client.pending("fn")
        assert question.value == {"doubled": 42}
        client.resume("fn", "ok")
        run = client.wait("fn", timeout=30)
        assert (run.status, run.engine) == ("done", "langgraph")
        app = lg_worker_graphs.doubling.copy(update={"checkpointer": WaylineSaver(client.store)})
        assert app.get_state({"configurable": {"thread_id": "fn"}}).values == {
            "doubled": 42,
            "answer": "ok",
        }
    finally:
        worker.stop()
        thread.join()


def queue(store: Store, graph: Any, value: Any, run_id: str, **options: Any) -> None:
    """Queue a run as ``wayline serve`` does: its input with a ``run_config`` (the config
    and context of an assistant and a run) and a ``webhook``."""
    engine = LangGraphEngine(graph)
    store.enqueue(
        "default",
        run_id,
        encode_inbox(default_codec, value, None, **options),
        graph_name=engine.name,
        graph_version=engine.version,
        durability="sync",
        schema_version="",
        engine="langgraph",
        fingerprint=engine.fingerprint,
        shape=engine.shape_json,
    )


def greeted(store: Store, run_id: str) -> Any:
    app = lg_worker_graphs.greeting.copy(update={"checkpointer": WaylineSaver(store)})
    return app.get_state({"configurable": {"thread_id": run_id}}).values


RUN_CONFIG = {"config": {"configurable": {"user": "ada"}}, "context": {"tone": "warm"}}


def test_a_takeover_after_the_input_was_taken_keeps_the_queued_config_and_context(
    url: str, side: Path, procs: list[Any]
) -> None:
    (side / "block-c").touch()
    first = spawn(procs, url, side, lease=1.0, name="first", graph=GREETING)
    store = wayline.connect(url)
    queue(store, lg_worker_graphs.greeting, {"said": []}, "c", run_config=RUN_CONFIG)
    wait_until(lambda: (side / "reached-c").exists(), "the first worker to be in the node")
    run = store.get_run("default", "c")
    assert run is not None and run.inbox is None  # its input checkpoint took the inbox
    first.kill()
    first.wait()
    spawn(procs, url, side, lease=5.0, name="second", graph=GREETING)
    assert Wayline(url).wait("c", timeout=60).status == "done"
    assert executions(side)[("c", 0)] == 2  # the node in flight at the kill ran again
    assert greeted(store, "c") == {"said": ["ada/warm"]}  # with what was queued


def test_a_langgraph_runs_webhook_is_told_once_across_a_kill(
    url: str, side: Path, procs: list[Any]
) -> None:
    everyone, own = Receiver(), Receiver()  # the worker's notifier's URL, the run's webhook=
    try:
        (side / "block-h").touch()
        hooks = ("--webhook", everyone.url, "--webhook-secret", SECRET)
        first = spawn(procs, url, side, lease=1.0, name="first", graph=GREETING, options=hooks)
        store = wayline.connect(url)
        queue(store, lg_worker_graphs.greeting, {"said": []}, "h", webhook=own.url)
        wait_until(lambda: (side / "reached-h").exists(), "the first worker to be in the node")
        first.kill()
        first.wait()
        spawn(procs, url, side, lease=1.0, name="second", graph=GREETING, options=hooks)
        assert Wayline(url).wait("h", timeout=60).status == "done"
        wait_until(lambda: own.events("h") and everyone.events("h"), "both notices")
        queue(store, lg_worker_graphs.greeting, {"said": []}, "h2")  # a run after: its
        assert Wayline(url).wait("h2", timeout=60).status == "done"  # notices sent by now
        wait_until(lambda: everyone.events("h2"), "the next run's notice")
        assert own.events("h") == {"run.ended": 1} and everyone.events("h") == {"run.ended": 1}
        (told,) = [p for p in own.posts if p["body"]["run_id"] == "h"]
        assert told["signed"] and told["body"]["status"] == "done"
        assert told["body"]["url"] == own.url
        assert own.events("h2") == {}  # a run without webhook= tells nobody
    finally:
        everyone.close()
        own.close()
