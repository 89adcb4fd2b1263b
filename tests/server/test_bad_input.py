"""Bad input gets a clear 4xx and loses nothing: malformed JSON, wrong content types,
oversized bodies, unknown assistants and threads, unsupported options, and a streaming
client that drops off mid-run (the run goes on; the stream can be joined again)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import Running, as_dict, until
from langgraph_sdk import get_sync_client


def _h(server: Running, key: str = "alice") -> dict[str, str]:
    return {"x-api-key": server.keys[key]}


@pytest.fixture(scope="module")
def thread(sqlite_server: Running) -> str:
    """A thread with one finished run: the state every bad request must leave alone."""
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    tid = c.threads.create()["thread_id"]
    c.runs.wait(tid, "simple", input={"n": 0})
    return tid


def _state(server: Running, tid: str) -> dict[str, Any]:
    r = httpx.get(f"{server.url}/threads/{tid}/state", headers=_h(server))
    assert r.status_code == 200
    state: dict[str, Any] = r.json()
    return state


@pytest.mark.parametrize(
    ("body", "content_type", "status", "says"),
    [
        (b'{"assistant_id": "simple", "input": ', "application/json", 422, "Invalid JSON"),
        (b"[1, 2]", "application/json", 422, "JSON object"),
        (b"assistant_id=simple", "application/x-www-form-urlencoded", 415, "content-type"),
        (b'{"assistant_id": "simple"}', "text/plain", 415, "application/json"),
        (b"", "application/json", 422, "JSON object body"),
        (b'{"assistant_id": "nope", "input": {}}', "application/json", 422, "no assistant"),
        (b'{"input": {}}', "application/json", 422, "no assistant"),
        (
            b'{"assistant_id": "simple", "input": {}, "interrupt_before": 5}',
            "application/json",
            422,
            "interrupt_before",
        ),
        (
            b'{"assistant_id": "simple", "input": {}, "stream_mode": ["bogus"]}',
            "application/json",
            422,
            "stream_mode",
        ),
        (
            b'{"assistant_id": "simple", "command": {"resume": 1}}',
            "application/json",
            409,
            "resume",
        ),
        (b'{"assistant_id": "ask", "input": {}}', "application/json", 409, "belongs to graph"),
        (
            b'{"assistant_id": "simple", "input": {}, "metadata": [1]}',
            "application/json",
            422,
            "metadata",
        ),
        (
            b'{"assistant_id": "simple", "input": {}, "config": [1]}',
            "application/json",
            422,
            "config",
        ),
        (
            b'{"assistant_id": "simple", "input": {}, "config": {"configurable": 5}}',
            "application/json",
            422,
            "config.configurable",
        ),
        (b'{"assistant_id": "simple", "input": {"zzz": 1}}', "application/json", None, None),
    ],
)
def test_bad_run_requests_are_refused_and_change_nothing(
    sqlite_server: Running,
    thread: str,
    body: bytes,
    content_type: str,
    status: int | None,
    says: str | None,
) -> None:
    before = _state(sqlite_server, thread)
    r = httpx.post(
        f"{sqlite_server.url}/threads/{thread}/runs/wait",
        content=body,
        headers={**_h(sqlite_server), "content-type": content_type},
    )
    if status is None:  # an undeclared key: the run fails with a typed error, nothing lost
        assert r.status_code == 200 and "__error__" in r.json()
        assert "zzz" in r.json()["__error__"]["message"]
        assert _state(sqlite_server, thread)["values"] == before["values"]
        return
    assert r.status_code == status, r.text
    assert says in r.json()["detail"]
    assert _state(sqlite_server, thread) == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/threads", {"metadata": [1]}),
        ("POST", "/threads/search", {"metadata": "x"}),
        ("PATCH", "/threads/{thread}", {"metadata": 5}),
    ],
)
def test_a_metadata_that_is_not_an_object_is_422(
    sqlite_server: Running, thread: str, method: str, path: str, body: dict[str, Any]
) -> None:
    before = _state(sqlite_server, thread)
    url = sqlite_server.url + path.format(thread=thread)
    r = httpx.request(method, url, json=body, headers=_h(sqlite_server))
    assert r.status_code == 422 and "metadata must be a JSON object" in r.json()["detail"]
    assert _state(sqlite_server, thread) == before


@pytest.mark.parametrize(
    ("method", "path", "body", "says"),
    [
        (
            "POST",
            "/threads/{thread}/runs",
            {"assistant_id": "simple", "input": {}, "stream_mode": 5},
            "stream_mode",
        ),
        ("POST", "/threads/{thread}/history", {"limit": "x"}, "limit"),
        ("POST", "/threads/{thread}/history", {"before": 5}, "checkpoint_id"),
        ("POST", "/threads/{thread}/history", {"metadata": {"step": 1}}, "not supported"),
        (
            "POST",
            "/threads/{thread}/history",
            {"checkpoint": {"checkpoint_ns": "child:1"}},
            "not supported",
        ),
        ("POST", "/assistants/search", {"limit": "x"}, "limit"),
        ("POST", "/threads", {"thread_id": {"a": 1}}, "thread_id must be a string"),
    ],
)
def test_a_field_of_the_wrong_type_is_422(
    sqlite_server: Running, thread: str, method: str, path: str, body: dict[str, Any], says: str
) -> None:
    before = _state(sqlite_server, thread)
    url = sqlite_server.url + path.format(thread=thread)
    r = httpx.request(method, url, json=body, headers=_h(sqlite_server))
    assert r.status_code == 422 and says in r.json()["detail"], r.text
    assert _state(sqlite_server, thread) == before


def test_oversized_body_is_refused_before_it_is_read(sqlite_server: Running, thread: str) -> None:
    big = json.dumps({"assistant_id": "simple", "input": {"items": ["x" * 100_000]}})
    before = _state(sqlite_server, thread)
    r = httpx.post(
        f"{sqlite_server.url}/threads/{thread}/runs",
        content=big,
        headers={**_h(sqlite_server), "content-type": "application/json"},
    )
    assert r.status_code == 413 and "limit" in r.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(100):
            yield b" " * 1024

    r = httpx.post(
        f"{sqlite_server.url}/threads",
        content=chunks(),
        headers={**_h(sqlite_server), "content-type": "application/json"},
    )
    assert r.status_code == 413
    assert _state(sqlite_server, thread) == before


def test_unknown_things_are_404(sqlite_server: Running, thread: str) -> None:
    h = _h(sqlite_server)
    base = sqlite_server.url
    for method, path in [
        ("GET", "/threads/no-such-thread"),
        ("GET", "/threads/no-such-thread/state"),
        ("POST", "/threads/no-such-thread/history"),
        ("GET", f"/threads/{thread}/runs/no-such-run"),
        ("GET", f"/threads/{thread}/runs/no-such-run/join"),
        ("GET", "/assistants/nope"),
        ("GET", "/wayline/runs/nope/effects"),
        ("GET", "/no/such/route"),
    ]:
        r = httpx.request(method, base + path, headers=h)
        assert r.status_code == 404, (path, r.text)
        assert r.json()["detail"]
    r = httpx.post(
        f"{base}/threads/no-such-thread/runs", json={"assistant_id": "simple"}, headers=h
    )
    assert r.status_code == 404 and "not found" in r.json()["detail"]
    r = httpx.get(f"{base}/threads/{thread}/state/zzzzzzzz-0000", headers=h)
    assert r.status_code == 404


def test_a_stream_client_that_drops_off_loses_nothing(sqlite_server: Running) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    tid = c.threads.create()["thread_id"]
    seen = []
    with httpx.stream(
        "POST",
        f"{sqlite_server.url}/threads/{tid}/runs/stream",
        json={"assistant_id": "slow", "input": {"n": 0, "until": 12}, "stream_mode": "values"},
        headers={**_h(sqlite_server), "accept": "text/event-stream"},
    ) as r:
        assert r.status_code == 200
        location = r.headers["location"]
        for line in r.iter_lines():
            if line.startswith("event:"):
                seen.append(line.split(":", 1)[1].strip())
            if seen.count("values") >= 2:
                break  # the client goes away mid-run
    run_id = location.split("/")[-2]
    assert c.runs.get(tid, run_id)["status"] in ("pending", "running")  # it went on

    replay = list(c.runs.join_stream(tid, run_id, stream_mode="values"))
    assert replay[0].event == "metadata"
    ns = [p.data["n"] for p in replay if p.event == "values"]
    assert ns == list(range(13))  # every step, from the input on, none missing
    later = list(c.runs.join_stream(tid, run_id, stream_mode="values", last_event_id="10"))
    assert [p.data["n"] for p in later if p.event == "values"] == [10, 11, 12]
    assert c.runs.get(tid, run_id)["status"] == "success"
    assert as_dict(c.threads.get_state(tid)["values"])["n"] == 12


def test_dev_mode_only_on_loopback() -> None:
    import wayline
    from wayline.errors import WaylineError
    from wayline.server import ServerConfig, serve
    from wayline.server.serve import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    with pytest.raises(WaylineError, match="loopback"):
        serve(
            wayline.connect("sqlite:///:memory:"), {}, host="0.0.0.0", config=ServerConfig(dev=True)
        )


def test_workers_run_the_runs_not_the_server(sqlite_server: Running) -> None:
    """Every executed run was claimed under a lease by the server's worker, whose owner
    is not the request handler: the run row names it."""
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "slow", input={"n": 0, "until": 8})
    owner = until(
        lambda: (
            (sqlite_server.store.get_run("acme", tid) or None)
            and sqlite_server.store.get_run("acme", tid).lease_owner
        ),
        what="a worker to claim the run",
    )
    worker = sqlite_server.app.state.worker
    assert owner == worker.owner
    c.runs.join(tid, run["run_id"])
    assert sqlite_server.store.get_run("acme", tid).fencing_token >= 1


def test_cors_for_a_chat_ui_on_another_origin(tmp_path: Path) -> None:
    from harness import start

    ui = "http://chat.example:3000"
    server = start(f"sqlite:///{tmp_path / 'cors.db'}", workers=0, cors_origins=(ui,))
    try:
        pre = httpx.options(
            f"{server.url}/threads",
            headers={
                "origin": ui,
                "access-control-request-method": "POST",
                "access-control-request-headers": "x-api-key,content-type",
            },
        )
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == ui
        made = httpx.post(f"{server.url}/threads", json={}, headers={**_h(server), "origin": ui})
        assert made.status_code == 200 and made.headers["access-control-allow-origin"] == ui
        other = httpx.post(
            f"{server.url}/threads", json={}, headers={**_h(server), "origin": "http://evil"}
        )
        assert "access-control-allow-origin" not in other.headers
        assert (
            httpx.post(f"{server.url}/threads", json={}, headers={"origin": ui}).status_code == 401
        )
    finally:
        server.stop()


def test_on_disconnect_cancel_stops_the_run(sqlite_server: Running) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    tid = c.threads.create()["thread_id"]
    body = {
        "assistant_id": "slow",
        "input": {"n": 0, "until": 10_000},
        "stream_mode": "values",
        "on_disconnect": "cancel",
    }
    with httpx.stream(
        "POST",
        f"{sqlite_server.url}/threads/{tid}/runs/stream",
        json=body,
        headers=_h(sqlite_server),
    ) as r:
        run_id = r.headers["location"].split("/")[-2]
        for line in r.iter_lines():
            if line.startswith("event: values"):
                break  # gone after the first state
    until(lambda: c.runs.get(tid, run_id)["status"] == "interrupted", what="the cancel")
    until(lambda: c.threads.get(tid)["status"] == "idle", what="the run to stop")
    assert as_dict(c.threads.get_state(tid)["values"])["n"] < 10_000  # stopped, its steps kept
