"""wayline's own routes, with runs executed by real ``wayline worker`` processes (the
server has no in-process workers here): a worker SIGKILLed after dispatching a charge
leaves its outcome unknown, the next worker parks the run, an operator resolves it over
HTTP, and the run finishes without charging again. Also bytes, export, purge, workers,
and the ``wayline keys`` commands."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from harness import CLI, Running, as_dict, start, until, worker_process
from langgraph_sdk import get_sync_client


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('op') / 'op.db'}"
    running = start(url, workers=0)
    yield running, url
    running.stop()


def _h(server: Running, key: str = "alice") -> dict[str, str]:
    return {"x-api-key": server.keys[key]}


def test_parked_effect_resolved_over_http(remote: tuple[Running, str]) -> None:
    server, url = remote
    c = get_sync_client(url=server.url, api_key=server.keys["alice"])
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "pay", input={"amount": 700})
    assert c.runs.get(tid, run["run_id"])["status"] == "pending"  # nobody runs it here

    doomed = worker_process(url, "pay", "simple", kill_in_charge=True)
    assert doomed.wait(30) == -signal.SIGKILL  # died inside the charge
    survivor = worker_process(url, "pay", "simple")
    try:
        until(lambda: c.threads.get(tid)["status"] == "error", what="the run to park")
        effects = httpx.get(f"{server.url}/wayline/runs/{tid}/effects", headers=_h(server)).json()
        (charge,) = [e for e in effects if e["name"] == "charge"]
        assert charge["status"] == "UNKNOWN"
        assert (
            httpx.get(f"{server.url}/wayline/runs/{tid}", headers=_h(server)).json()["status"]
            == "parked"
        )

        bad = httpx.post(
            f"{server.url}/wayline/runs/{tid}/effects/{charge['key']}/resolve",
            json={"outcome": "maybe"},
            headers=_h(server),
        )
        assert bad.status_code == 422
        reader = httpx.post(
            f"{server.url}/wayline/runs/{tid}/effects/{charge['key']}/resolve",
            json={"outcome": "succeeded", "result": {"id": "ch_manual", "amount": 700}},
            headers=_h(server, "reader"),
        )
        assert reader.status_code == 403
        ok = httpx.post(
            f"{server.url}/wayline/runs/{tid}/effects/{charge['key']}/resolve",
            json={"outcome": "succeeded", "result": {"id": "ch_manual", "amount": 700}},
            headers=_h(server),
        )
        assert ok.status_code == 200 and ok.json()["status"] == "SUCCEEDED"
        until(lambda: c.threads.get(tid)["status"] == "idle", what="the run to finish")
        assert as_dict(c.threads.get_state(tid)["values"])["receipt"] == {
            "id": "ch_manual",
            "amount": 700,
        }

        # a run started over the API and executed by another process entirely
        out = c.runs.wait(None, "simple", input={"n": 1})
        assert out == {"items": ["a", "b"], "n": 2}
    finally:
        survivor.send_signal(signal.SIGTERM)
        survivor.wait(30)

    size = httpx.get(f"{server.url}/wayline/runs/{tid}/bytes", headers=_h(server)).json()
    assert size["total"] == sum(r["bytes"] for r in size["rows"]) > 0
    assert {"deltas", "effects"} <= set(size["per_table"])
    assert (
        httpx.get(f"{server.url}/wayline/runs/{tid}/export", headers=_h(server)).status_code == 403
    )
    dump = httpx.get(f"{server.url}/wayline/runs/{tid}/export", headers=_h(server, "admin"))
    assert dump.status_code == 200 and tid in str(dump.json())
    listed = httpx.get(f"{server.url}/wayline/runs?status=done", headers=_h(server)).json()
    assert tid in [r["run_id"] for r in listed]
    assert httpx.get(f"{server.url}/wayline/workers", headers=_h(server)).status_code == 200

    assert httpx.delete(f"{server.url}/wayline/runs/{tid}", headers=_h(server)).status_code == 403
    gone = httpx.delete(f"{server.url}/wayline/runs/{tid}", headers=_h(server, "admin"))
    assert gone.status_code == 200 and gone.json()["rows_deleted"] > 0
    assert server.store.get_run("acme", tid) is None
    assert httpx.get(f"{server.url}/threads/{tid}", headers=_h(server)).status_code == 404


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env)


def test_keys_create_list_revoke(remote: tuple[Running, str]) -> None:
    server, url = remote
    made = _cli(
        "keys",
        "create",
        "--db",
        url,
        "--tenant",
        "acme",
        "--actor",
        "carol",
        "--roles",
        "finance,ops",
        "--scopes",
        "read",
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("wl_")
    key_id = key.split("_")[1]
    assert key not in _cli("keys", "list", "--db", url, "--tenant", "acme").stdout
    listed = _cli("keys", "list", "--db", url, "--tenant", "acme").stdout
    assert key_id in listed and "carol" in listed and "finance,ops" in listed
    assert key_id not in _cli("keys", "list", "--db", url, "--tenant", "globex").stdout
    raw = server.store._read_dicts("SELECT * FROM api_keys", ())
    assert all(key not in str(row) for row in raw)  # stored hashed, never the key

    assert (
        httpx.post(f"{server.url}/threads/search", json={}, headers={"x-api-key": key}).status_code
        == 200
    )
    assert _cli("keys", "revoke", key_id, "--db", url, "--tenant", "globex").returncode == 1
    assert _cli("keys", "revoke", key_id, "--db", url, "--tenant", "acme").returncode == 0
    refused = httpx.post(f"{server.url}/threads/search", json={}, headers={"x-api-key": key})
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]


def test_the_approvals_inbox_pages_through_waiting_runs(server: Running) -> None:
    """Thousands of runs may wait at an approval: the inbox is read a page of waiting runs
    at a time (``limit``, ``offset``), newest first, none left out."""
    c = get_sync_client(url=server.url, api_key=server.keys["alice"])
    waiting = []
    for _ in range(3):
        tid = c.threads.create()["thread_id"]
        ask: dict[str, Any] = {"items": ["x"], "n": 0}
        c.runs.wait(tid, "ask", input=ask)
        waiting.append(tid)
    url, headers = f"{server.url}/wayline/approvals", {"x-api-key": server.keys["alice"]}
    seen: list[str] = []
    for offset in range(0, 100):
        page = httpx.get(url, params={"limit": 1, "offset": offset}, headers=headers).json()
        if not page:
            break
        seen.extend(i["run_id"] for i in page)
    everything = [i["run_id"] for i in httpx.get(url, headers=headers).json()]
    assert seen == everything and set(waiting) <= set(seen)
    assert seen.index(waiting[2]) < seen.index(waiting[1]) < seen.index(waiting[0])
    bad = httpx.get(url, params={"limit": "x"}, headers=headers)
    assert bad.status_code == 422
