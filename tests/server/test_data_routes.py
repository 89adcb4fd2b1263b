"""Scopes and data classes over HTTP: a ``read`` key cannot start, resume or approve a run
(403, the reason in the body), nor erase; an ``execute`` key cannot erase; an ``admin``
key exports and erases a data subject named in ``config.configurable.subject``."""

from __future__ import annotations

import httpx
from harness import Running
from langgraph_sdk import get_sync_client


def _h(server: Running, key: str) -> dict[str, str]:
    return {"x-api-key": server.keys[key]}


def test_read_keys_cannot_execute_and_admins_erase_subjects(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"])
    sam = c.threads.create()["thread_id"]
    c.runs.wait(sam, "ask", input={"n": 0}, config={"configurable": {"subject": "sam"}})
    assert c.threads.get(sam)["status"] == "interrupted"
    tom = c.threads.create()["thread_id"]
    c.runs.wait(tom, "simple", input={"n": 0}, config={"configurable": {"subject": "tom"}})

    start = httpx.post(
        f"{server.url}/runs/wait",
        json={"assistant_id": "simple", "input": {"n": 1}},
        headers=_h(server, "reader"),
    )
    assert start.status_code == 403 and "execute" in start.json()["detail"]
    resume = httpx.post(
        f"{server.url}/threads/{sam}/runs/wait",
        json={"assistant_id": "ask", "command": {"resume": "yes"}},
        headers=_h(server, "reader"),
    )
    assert resume.status_code == 403
    decide = httpx.post(
        f"{server.url}/wayline/runs/{sam}/approvals/decide",
        json={"decision": "yes"},
        headers=_h(server, "reader"),
    )
    assert decide.status_code == 403
    assert c.threads.get(sam)["status"] == "interrupted"  # nothing moved
    for key in ("reader", "alice"):
        erase = httpx.post(f"{server.url}/wayline/subjects/sam/erase", headers=_h(server, key))
        assert erase.status_code == 403 and "admin" in erase.json()["detail"]

    exported = httpx.get(f"{server.url}/wayline/subjects/sam", headers=_h(server, "admin"))
    assert exported.status_code == 200
    assert [r["run_id"] for r in exported.json()["runs"]] == [sam]
    erased = httpx.post(f"{server.url}/wayline/subjects/sam/erase", headers=_h(server, "admin"))
    assert erased.status_code == 200 and erased.json()["runs"] == [sam]
    assert server.store.get_run("acme", sam) is None
    assert server.store.get_run("acme", tom) is not None  # another subject: untouched
    dry = httpx.post(
        f"{server.url}/wayline/retention/apply",
        json={"policy": "default=0d:purge", "dry_run": True},
        headers=_h(server, "admin"),
    )
    assert dry.status_code == 200 and tom in [a["run_id"] for a in dry.json()]
    assert server.store.get_run("acme", tom) is not None
