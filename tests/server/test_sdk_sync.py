"""The LangGraph API through the official ``langgraph-sdk`` sync client, on SQLite and
PostgreSQL: threads, runs, streams, state, history, interrupts, join, cancel, tenants."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from harness import Running, as_dict, until
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from wayline.server import service

ASK_INPUT: dict[str, Any] = {"items": ["x"], "n": 0}


def client(server: Running, key: str | None = "alice") -> SyncLangGraphClient:
    return get_sync_client(url=server.url, api_key=server.keys[key] if key else None, timeout=30.0)


def test_thread_run_state_and_history(server: Running) -> None:
    c = client(server)
    assistants = c.assistants.search(graph_id="simple")
    assert [a["graph_id"] for a in assistants] == ["simple"]
    thread = c.threads.create(metadata={"user": "u1"})
    assert thread["status"] == "idle" and thread["values"] is None
    out = as_dict(c.runs.wait(thread["thread_id"], assistants[0]["assistant_id"], input={"n": 0}))
    assert out == {"items": ["a", "b"], "n": 1}

    state = c.threads.get_state(thread["thread_id"])
    assert state["values"] == out and state["next"] == []
    assert as_dict(state["metadata"])["step"] == 2
    assert state["checkpoint"]["thread_id"] == thread["thread_id"]
    history = c.threads.get_history(thread["thread_id"], limit=10)
    assert [as_dict(h["metadata"])["step"] for h in history] == [2, 1, 0, -1]
    assert history[-1]["next"] == ["__start__"] and history[-1]["values"] == {}
    assert history[1]["next"] == ["b"] and history[1]["values"] == {"items": ["a"], "n": 1}
    earlier = c.threads.get_state(
        thread["thread_id"], checkpoint_id=as_dict(history[2])["checkpoint_id"]
    )
    assert earlier["values"] == {"items": [], "n": 0} and earlier["next"] == ["a"]
    # before, as the SDK sends it: a checkpoint id, or a config naming one
    second = as_dict(history[1])["checkpoint_id"]
    for before in (second, {"configurable": {"checkpoint_id": second}}):
        older = c.threads.get_history(thread["thread_id"], before=before)  # type: ignore[arg-type]
        assert [as_dict(h["metadata"])["step"] for h in older] == [0, -1]

    got = c.threads.get(thread["thread_id"])
    assert got["status"] == "idle" and got["values"] == out
    assert (
        as_dict(got["metadata"])["user"] == "u1"
        and as_dict(got["metadata"])["graph_id"] == "simple"
    )
    runs = c.runs.list(thread["thread_id"])
    assert [r["status"] for r in runs] == ["success"]
    assert thread["thread_id"] in [t["thread_id"] for t in c.threads.search(limit=100)]


def test_stream_pauses_on_interrupt_and_resume_continues(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    parts = list(c.runs.stream(tid, "ask", input=ASK_INPUT, stream_mode=["values", "updates"]))
    events = [p.event for p in parts]
    assert events == ["metadata", "values", "updates", "values", "updates", "values"]
    assert set(parts[0].data) == {"run_id", "attempt"}
    assert parts[1].data == {"items": ["x"], "n": 0}  # the input state first
    assert parts[2].data == {"a": {"items": ["a"], "n": 1}}
    asked = parts[4].data["__interrupt__"]
    assert asked[0]["value"] == {"question": "ok?", "n": 1}
    assert parts[5].data["__interrupt__"] == asked

    assert c.threads.get(tid)["status"] == "interrupted"
    run = c.runs.get(tid, parts[0].data["run_id"])
    assert run["status"] == "success"  # as LangGraph: the run ended, the thread waits
    state = c.threads.get_state(tid)
    assert state["next"] == ["ask"] and state["interrupts"][0]["id"] == asked[0]["id"]
    assert state["tasks"][0]["interrupts"][0]["value"] == {"question": "ok?", "n": 1}

    out = as_dict(c.runs.wait(tid, "ask", command={"resume": "yes"}))
    assert out == {"items": ["x", "a", "answer:yes", "b"], "n": 1}
    assert c.threads.get(tid)["status"] == "idle"
    assert len(c.runs.list(tid)) == 2


def test_wait_returns_the_interrupt(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    out = as_dict(c.runs.wait(tid, "ask", input={"n": 5}))
    assert out["n"] == 6 and out["__interrupt__"][0]["value"]["n"] == 6
    resumed = list(c.runs.stream(tid, "ask", command={"resume": "no"}, stream_mode="values"))
    assert resumed[1].data["items"] == ["a"]  # a resume starts with the current state
    assert resumed[-1].data["items"] == ["a", "answer:no", "b"]


def test_background_run_and_join(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "slow", input={"n": 0, "until": 6})
    assert run["status"] in ("pending", "running")
    assert c.runs.join(tid, run["run_id"]) == {
        "items": [f"t{i}" for i in range(6)],
        "n": 6,
        "until": 6,
    }
    assert c.runs.get(tid, run["run_id"])["status"] == "success"
    with pytest.raises(httpx.HTTPStatusError) as refused:  # finished: nothing to cancel
        c.runs.cancel(tid, run["run_id"])
    assert refused.value.response.status_code == 404


def test_cancel_keeps_finished_steps_and_the_thread_goes_on(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "slow", input={"n": 0, "until": 10_000})
    until(lambda: as_dict(c.threads.get_state(tid)["values"]).get("n", 0) >= 2, what="two ticks")
    c.runs.cancel(tid, run["run_id"], wait=True)
    assert c.runs.get(tid, run["run_id"])["status"] == "interrupted"
    kept = as_dict(c.threads.get_state(tid)["values"])
    assert 2 <= kept["n"] < 10_000 and len(kept["items"]) == kept["n"]
    assert c.threads.get(tid)["status"] == "idle"

    out = as_dict(c.runs.wait(tid, "slow", input={"until": kept["n"] + 2}))
    assert out["n"] == kept["n"] + 2  # the thread continued from its kept steps
    assert out["items"][: kept["n"]] == kept["items"]


def test_busy_thread_refuses_a_second_run(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "slow", input={"n": 0, "until": 20})
    with pytest.raises(httpx.HTTPStatusError) as busy:
        c.runs.create(tid, "slow", input={"n": 0})
    assert busy.value.response.status_code == 409
    assert "busy" in busy.value.response.json()["detail"]
    assert c.runs.join(tid, run["run_id"])["n"] == 20


def test_another_tenants_key_sees_nothing(server: Running) -> None:
    alice, eve = client(server), client(server, "eve")
    tid = alice.threads.create()["thread_id"]
    alice.runs.wait(tid, "simple", input={"n": 0})
    for attempt in (
        lambda: eve.threads.get(tid),
        lambda: eve.threads.get_state(tid),
        lambda: eve.threads.get_history(tid),
        lambda: eve.runs.create(tid, "simple", input={"n": 1}),
        lambda: eve.runs.list(tid),
    ):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            attempt()
        assert refused.value.response.status_code == 404
    assert tid not in [t["thread_id"] for t in eve.threads.search(limit=1000)]
    assert as_dict(alice.threads.get_state(tid)["values"])["n"] == 1  # untouched


def test_no_key_or_a_bad_key_is_refused(server: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    for c in (client(server, None), get_sync_client(url=server.url, api_key="wl_nope_nope")):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            c.threads.create()
        assert refused.value.response.status_code == 401
        assert "key" in refused.value.response.json()["detail"]
    assert httpx.get(f"{server.url}/ok").json() == {"ok": True}


def test_scopes(server: Running) -> None:
    reader, alice, admin = client(server, "reader"), client(server), client(server, "admin")
    tid = alice.threads.create()["thread_id"]
    alice.runs.wait(tid, "simple", input={"n": 0})
    assert as_dict(reader.threads.get_state(tid)["values"])["n"] == 1  # read
    with pytest.raises(httpx.HTTPStatusError) as refused:
        reader.runs.create(tid, "simple", input={"n": 0})
    assert refused.value.response.status_code == 403
    assert "execute" in refused.value.response.json()["detail"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        alice.threads.delete(tid)  # a delete is a purge: admin
    assert refused.value.response.status_code == 403
    admin.threads.delete(tid)
    with pytest.raises(httpx.HTTPStatusError) as gone:
        alice.threads.get(tid)
    assert gone.value.response.status_code == 404
    assert server.store.get_run("acme", tid) is None  # every row of the run, purged


def test_failed_run_reports_the_error(server: Running) -> None:
    c = client(server)
    tid = c.threads.create()["thread_id"]
    parts = list(c.runs.stream(tid, "failing", input={"n": 0}))
    assert parts[-1].event == "error"
    assert parts[-1].data == {"error": "ValueError", "message": "the model refused"}
    assert c.threads.get(tid)["status"] == "error"
    assert c.runs.list(tid)[0]["status"] == "error"
    out = as_dict(c.runs.wait(tid, "failing", input={"n": 0}, raise_error=False))
    assert out["__error__"] == {"error": "ValueError", "message": "the model refused"}


def test_stateless_run(server: Running) -> None:
    c = client(server)
    assert c.runs.wait(None, "simple", input={"n": 3}) == {"items": ["a", "b"], "n": 4}
    parts = list(c.runs.stream(None, "simple", input={"n": 0}, stream_mode="updates"))
    assert [p.event for p in parts] == ["metadata", "updates", "updates"]


def test_assistant_graph_schemas_and_thread_edits(server: Running) -> None:
    c = client(server)
    (assistant,) = c.assistants.search(graph_id="ask")
    assert c.assistants.get("ask")["assistant_id"] == assistant["assistant_id"]
    graph = c.assistants.get_graph(assistant["assistant_id"])
    assert {n["id"] for n in graph["nodes"]} == {"__start__", "a", "ask", "b", "__end__"}
    assert {"source": "a", "target": "ask"} in graph["edges"]
    schemas = c.assistants.get_schemas(assistant["assistant_id"])
    assert set(as_dict(schemas["state_schema"])["properties"]) == {"items", "n"}

    tid = c.threads.create(metadata={"k": 1})["thread_id"]
    assert c.threads.update(tid, metadata={"j": 2})["metadata"] == {"k": 1, "j": 2}
    before = c.threads.count()
    c.threads.create()
    assert c.threads.count() == before + 1

    c.runs.wait(tid, "simple", input={"n": 0})
    done = c.threads.update_state(tid, {"n": 42})
    state = as_dict(c.threads.get_state(tid))
    assert state["values"]["n"] == 42 and state["checkpoint_id"] == as_dict(done)["checkpoint_id"]
    # a partial checkpoint, which the server takes as LangGraph's does (the SDK types a full one)
    partial = {"checkpoint_id": state["parent_checkpoint_id"]}
    at = c.threads.get_state(tid, checkpoint=partial)  # type: ignore[arg-type]
    assert as_dict(at["values"])["n"] == 1
    assert as_dict(c.threads.get_history(tid)[0]["values"])["n"] == 42


def test_operator_routes_and_dashboard_pages(server: Running) -> None:
    """Every wayline route and dashboard page answers on this backend (the browser test
    and the worker-process test drive them in depth on SQLite)."""
    c = client(server)
    tid = c.threads.create()["thread_id"]
    c.runs.wait(tid, "refund", input={"amount": 3})
    h = {"x-api-key": server.keys["alice"]}
    inbox = httpx.get(f"{server.url}/wayline/approvals", headers=h).json()
    assert [q["you_may_decide"] for q in inbox if q["run_id"] == tid] == [True]
    for path in (
        "/wayline/runs",
        f"/wayline/runs/{tid}",
        f"/wayline/runs/{tid}/effects",
        f"/wayline/runs/{tid}/audit",
        f"/wayline/runs/{tid}/bytes",
        "/wayline/workers",
    ):
        assert httpx.get(server.url + path, headers=h).status_code == 200, path
    ui = httpx.Client(base_url=server.url)
    assert ui.post("/ui/login", data={"key": server.keys["alice"]}).status_code == 303
    for path in (
        "/ui/runs?status=interrupted",
        f"/ui/runs/{tid}",
        "/ui/approvals",
        "/ui/reconcile",
        "/ui/workers",
        "/ui/audit",
    ):
        page = ui.get(path)
        assert page.status_code == 200 and 'class="err"' not in page.text, path
    assert tid in ui.get("/ui/approvals").text


def test_a_joined_stream_repeats_the_first_one(server: Running) -> None:
    """The stream of a run, opened again, sends the same events with the same ids (what a
    reconnect's Last-Event-ID relies on): for a first run, a resume, and new input."""
    c = client(server)
    tid = c.threads.create()["thread_id"]
    streams = {}
    for kwargs in ({"input": {"n": 0}}, {"command": {"resume": "y"}}, {"input": {"n": 7}}):
        first = list(c.runs.stream(tid, "ask", stream_mode=["values", "updates"], **kwargs))
        streams[first[0].data["run_id"]] = [(p.event, p.data, p.id) for p in first[1:]]
    last = list(streams)[-1]
    for run_id, first_time in streams.items():  # each run's own steps, even after later runs
        again = list(c.runs.join_stream(tid, run_id, stream_mode=["values", "updates"]))
        own = [(p.event, p.data, p.id) for p in again[1:]]
        if run_id != last and "__interrupt__" in str(first_time[-1]):
            first_time = first_time[:-2]  # it paused, and the pause was answered since
        assert own == first_time


def test_thread_search_reaches_past_its_first_batch(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search filters as it reads, a batch at a time: a tenant's threads past the first
    batch are found and paged (the first thousand were all a search ever saw)."""
    monkeypatch.setattr(service, "SEARCH_BATCH", 2)
    c = client(server, "bob")
    tag = uuid.uuid4().hex
    made = [c.threads.create(metadata={"tag": tag, "odd": i % 2})["thread_id"] for i in range(7)]
    newest_first = made[::-1]
    odd = [t for t in newest_first if made.index(t) % 2]
    found = c.threads.search(metadata={"tag": tag, "odd": 1}, limit=2, offset=1)
    assert [t["thread_id"] for t in found] == odd[1:3]
    everything = c.threads.search(metadata={"tag": tag}, limit=10)
    assert [t["thread_id"] for t in everything] == newest_first
