"""Two of LangGraph's published apps, unchanged, under ``wayline serve --config
langgraph.json`` (a real server process), driven by the official ``langgraph-sdk``, on
SQLite and PostgreSQL: the react-agent template (async nodes, a ToolNode, a context
schema, an ``.env``) and the review-tool-calls human-in-the-loop how-to (an ``interrupt``
resumed with ``Command(resume=...)``, a ``Command(goto=...)`` from a node). Both run
LangGraph's own engine on wayline's workers (``wayline.langgraph.engine``): the server's
own for the first, a ``wayline worker --config langgraph.json`` process for the second.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import as_dict
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

import wayline

APPS = Path(__file__).resolve().parents[2] / "examples" / "langgraph_apps"
QUESTION: dict[str, Any] = {"messages": [{"role": "user", "content": "what is wayline?"}]}


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'apps.db'}"
    return str(request.getfixturevalue("pg_url"))


def serve(
    app: str, db: str, tmp_path: Path, *, own_worker: bool = False
) -> Iterator[tuple[SyncLangGraphClient, Path]]:
    """The app under ``wayline serve --config``; with ``own_worker``, a server that runs
    nothing itself (``--workers 0``) and a ``wayline worker --config`` process that does."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    log = tmp_path / f"{app}.log"
    config = APPS / app / "langgraph.json"
    cmd = [sys.executable, "-m", "wayline.cli.main", "serve", "--config", str(config)]
    workers = "0" if own_worker else "2"
    cmd += ["--db", db, "--dev", "--port", str(port), "--workers", workers, "--cpus", "all"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    procs = [proc]
    if own_worker:
        work = [sys.executable, "-m", "wayline.cli.main", "worker", "--config", str(config)]
        work += ["--db", db, "--poll", "0.05", "--cpus", "all"]
        with open(tmp_path / f"{app}-worker.log", "wb") as out:
            procs.append(subprocess.Popen(work, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"the server did not start: {log.read_text()}"
            time.sleep(0.05)
        yield get_sync_client(url=url, timeout=30.0), log
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def react(db: str, tmp_path: Path) -> Iterator[tuple[SyncLangGraphClient, Path]]:
    yield from serve("react_agent", db, tmp_path)


@pytest.fixture
def hitl(db: str, tmp_path: Path) -> Iterator[tuple[SyncLangGraphClient, Path]]:
    yield from serve("hitl_agent", db, tmp_path, own_worker=True)


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [m["type"] for m in messages]


def test_the_react_agent_template_answers_with_its_tool_and_streams_each_step(
    react: tuple[SyncLangGraphClient, Path], db: str
) -> None:
    c, _ = react
    (assistant,) = c.assistants.search()
    assert assistant["graph_id"] == "agent"
    thread = c.threads.create()
    tid = thread["thread_id"]
    out = as_dict(c.runs.wait(tid, "agent", input=QUESTION))
    assert kinds(out["messages"]) == ["human", "ai", "tool", "ai"]
    assert out["messages"][1]["tool_calls"][0]["name"] == "search"
    found = json.loads(out["messages"][2]["content"])
    assert len(found["results"]) == 1  # MAX_SEARCH_RESULTS=1 from the app's .env
    assert out["messages"][3]["content"].startswith("wayline is")

    again: dict[str, Any] = {"messages": [{"role": "user", "content": "and again?"}]}
    chunks = list(c.runs.stream(tid, "agent", input=again, stream_mode=["updates", "values"]))
    events = [(ch.event, list(ch.data) if isinstance(ch.data, dict) else None) for ch in chunks]
    assert events[0][0] == "metadata"
    updates = [names[0] for event, names in events if event == "updates" and names]
    assert updates == ["call_model", "tools", "call_model"]  # each node's step, in order
    values = [ch.data for ch in chunks if ch.event == "values"]
    assert kinds(as_dict(values[0])["messages"]) == ["human", "ai", "tool", "ai", "human"]
    assert len(as_dict(values[-1])["messages"]) == 8
    state = c.threads.get_state(tid)
    assert state["next"] == [] and len(as_dict(state["values"])["messages"]) == 8
    history = c.threads.get_history(tid, limit=4)
    steps = [as_dict(h["metadata"])["step"] for h in history]
    assert steps == sorted(steps, reverse=True) and steps[0] == as_dict(state["metadata"])["step"]
    run = wayline.connect(db).get_run("default", tid)
    assert run is not None and (run.engine, run.status) == ("langgraph", "done")


def test_the_review_tool_calls_example_waits_for_a_decision_and_goes_on(
    hitl: tuple[SyncLangGraphClient, Path], db: str
) -> None:
    c, _ = hitl
    tid = c.threads.create()["thread_id"]
    ask: dict[str, Any] = {"messages": [{"role": "user", "content": "what's the weather in sf?"}]}
    paused = as_dict(c.runs.wait(tid, "weather", input=ask))
    (question,) = paused["__interrupt__"]
    assert question["value"]["question"] == "Is this correct?"
    assert question["value"]["tool_call"]["args"] == {"city": "sf"}
    thread = c.threads.get(tid)
    assert thread["status"] == "interrupted"
    store = wayline.connect(db)
    run = store.get_run("default", tid)
    assert run is not None and (run.status, run.lease_owner) == ("interrupted", None)

    update = {"action": "update", "data": {"city": "San Francisco"}}
    done = as_dict(c.runs.wait(tid, "weather", command={"resume": update}))
    assert kinds(done["messages"]) == ["human", "ai", "tool", "ai"]
    assert done["messages"][1]["tool_calls"][0]["args"] == {"city": "San Francisco"}
    assert done["messages"][2]["content"] == "Sunny in San Francisco!"
    assert c.threads.get(tid)["status"] == "idle"
    decided = [(a.action, a.outcome) for a in store.load_audit("default", tid)]
    assert ("decide", "accepted") in decided  # through wayline's decision path
