"""A damaged row behind the API is the server's failure, not the client's: a 500 whose
detail names the row (what an operator restores from a backup), while the tenant's other
threads are served as before, and the thread is served again once the row is restored.
A full disk is a 507 that loses nothing: the same request succeeds once there is space."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from harness import Running, start
from langgraph_sdk import get_sync_client

ASK_INPUT: dict[str, Any] = {"items": ["x"], "n": 0}


def _state(server: Running, tid: str) -> httpx.Response:
    return httpx.get(
        f"{server.url}/threads/{tid}/state", headers={"x-api-key": server.keys["alice"]}
    )


def _delta(store: Any, tid: str, payload: bytes | None = None) -> bytes:
    """The thread's last delta payload; with ``payload``, written over it."""
    ph = store.placeholder
    where = f"tenant_id = 'acme' AND run_id = {ph}"
    last = f"(SELECT MAX(step) FROM deltas WHERE {where})"
    with store._tx("acme") as db:
        (stored,) = db.execute(
            f"SELECT payload FROM deltas WHERE {where} AND step = {last}", (tid, tid)
        ).fetchone()
        if payload is not None:
            db.execute(
                f"UPDATE deltas SET payload = {ph} WHERE {where} AND step = {last}",
                (payload, tid, tid),
            )
    return bytes(stored)


def test_a_damaged_row_is_a_server_error_that_names_it(sqlite_server: Running) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    damaged, other = (c.threads.create()["thread_id"] for _ in range(2))
    for tid in (damaged, other):
        c.runs.wait(tid, "simple", input={"n": 0})
    before = _state(sqlite_server, damaged).json()

    good = _delta(sqlite_server.store, damaged)
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0x20
    _delta(sqlite_server.store, damaged, bytes(flipped))
    response = _state(sqlite_server, damaged)
    assert response.status_code == 500, response.text
    detail = response.json()["detail"]
    assert f"deltas row of run {damaged!r}" in detail and "corrupt" in detail, detail
    assert _state(sqlite_server, other).status_code == 200

    _delta(sqlite_server.store, damaged, good)
    restored = _state(sqlite_server, damaged)
    assert restored.status_code == 200 and restored.json()["values"] == before["values"]


def test_a_full_disk_is_507_and_the_request_can_be_sent_again(tmp_path: Path) -> None:
    server = start(f"sqlite:///{tmp_path / 'full.db'}")
    try:
        c = get_sync_client(url=server.url, api_key=server.keys["alice"])
        tid = c.threads.create()["thread_id"]
        db = server.store._db  # the server's own write connection
        (pages,) = db.execute("PRAGMA page_count").fetchone()
        db.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL, as a full disk
        url = f"{server.url}/threads/{tid}/runs"
        body = {"assistant_id": "simple", "input": {"n": 0, "items": ["x" * 40_000]}}
        headers = {"x-api-key": server.keys["alice"]}
        full = httpx.post(url, json=body, headers=headers)
        assert full.status_code == 507, full.text
        assert "is full" in full.json()["detail"] and "intact" in full.json()["detail"]
        db.execute("PRAGMA max_page_count = 1073741823")  # space is back
        again = httpx.post(url, json=body, headers=headers)
        assert again.status_code == 200, again.text
        done = c.runs.join(tid, again.json()["run_id"])
        assert done["n"] == 1 and done["items"][0] == "x" * 40_000
    finally:
        server.stop()


def test_a_thread_whose_metadata_cannot_be_read_is_a_named_server_error(
    sqlite_server: Running,
) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    tid = c.threads.create(metadata={"owner": "alice"})["thread_id"]
    store = sqlite_server.store
    damage = (
        f"UPDATE threads SET metadata = {store.placeholder} WHERE thread_id = {store.placeholder}"
    )
    with store._tx("acme") as db:
        db.execute(damage, ('{"owner": ', tid))
    r = httpx.get(
        f"{sqlite_server.url}/threads/{tid}", headers={"x-api-key": sqlite_server.keys["alice"]}
    )
    assert r.status_code == 500 and f"threads row of run {tid!r}" in r.json()["detail"], r.text
    with store._tx("acme") as db:
        db.execute(damage, ('{"owner": "alice"}', tid))
    assert c.threads.get(tid)["metadata"] == {"owner": "alice"}


def test_a_waiting_run_whose_question_cannot_be_read_hides_no_other_approval(
    sqlite_server: Running,
) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    damaged, other = (c.threads.create()["thread_id"] for _ in range(2))
    for tid in (damaged, other):
        c.runs.wait(tid, "ask", input=ASK_INPUT)
    store = sqlite_server.store
    crc = (
        f"UPDATE interrupts SET crc = crc + {store.placeholder} WHERE run_id = {store.placeholder}"
    )
    with store._tx("acme") as db:
        db.execute(crc, (1, damaged))
    headers = {"x-api-key": sqlite_server.keys["alice"]}
    r = httpx.get(f"{sqlite_server.url}/wayline/approvals", headers=headers)
    assert r.status_code == 200, r.text
    by_run = {i["run_id"]: i for i in r.json()}
    assert by_run[other]["error"] is None and by_run[other]["interrupt_id"]
    unreadable = by_run[damaged]
    assert "interrupts row of run" in unreadable["error"] and not unreadable["you_may_decide"]
    ui = httpx.Client(base_url=sqlite_server.url)  # the dashboard's approvals page too
    assert ui.post("/ui/login", data={"key": sqlite_server.keys["alice"]}).status_code == 303
    page = ui.get("/ui/approvals")
    assert page.status_code == 200 and "is corrupt" in page.text and other in page.text
    with store._tx("acme") as db:
        db.execute(crc, (-1, damaged))
    again = httpx.get(f"{sqlite_server.url}/wayline/approvals", headers=headers).json()
    assert all(i["error"] is None for i in again if i["run_id"] in (damaged, other))
