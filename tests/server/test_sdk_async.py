"""The async ``langgraph-sdk`` client, and wayline's approvals over HTTP: a decision is
the key's actor's, checked against the interrupt's approvers, and audited."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from harness import Running, as_dict
from langgraph_sdk import get_client


def test_async_client_stream_resume_and_join(server: Running) -> None:
    async def scenario() -> None:
        c = get_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
        tid = (await c.threads.create())["thread_id"]
        events = [
            p.event async for p in c.runs.stream(tid, "ask", input={"n": 0}, stream_mode="updates")
        ]
        assert events == ["metadata", "updates", "updates"]  # a's update, the interrupt
        state = await c.threads.get_state(tid)
        assert state["next"] == ["ask"]
        run = await c.runs.create(tid, "ask", command={"resume": "async"})
        out = await c.runs.join(tid, run["run_id"])
        assert out["items"] == ["a", "answer:async", "b"]
        history = await c.threads.get_history(tid)
        assert history[0]["values"] == out and history[-1]["next"] == ["__start__"]

        # several threads at once through one client
        threads = [(await c.threads.create())["thread_id"] for _ in range(4)]
        outs = await asyncio.gather(
            *(c.runs.wait(t, "simple", input={"n": i}) for i, t in enumerate(threads))
        )
        assert [as_dict(o)["n"] for o in outs] == [1, 2, 3, 4]

    asyncio.run(scenario())


def _decide(server: Running, key: str, run_id: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{server.url}/wayline/runs/{run_id}/approvals/decide",
        json=body,
        headers={"x-api-key": server.keys[key]},
    )


def test_an_approval_needs_an_actor_with_the_role(server: Running) -> None:
    async def scenario() -> None:
        alice = get_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
        bob = get_client(url=server.url, api_key=server.keys["bob"], timeout=30.0)
        tid = (await alice.threads.create())["thread_id"]
        out = as_dict(await alice.runs.wait(tid, "refund", input={"amount": 4200}))
        question = out["__interrupt__"][0]
        assert question["approvers"] == ["finance"] and question["digest"]

        with pytest.raises(httpx.HTTPStatusError) as refused:  # bob lacks the role
            await bob.runs.wait(tid, "refund", command={"resume": {"approved": True}})
        assert refused.value.response.status_code == 403
        assert "bob" in refused.value.response.json()["detail"]
        assert (await bob.threads.get(tid))["status"] == "interrupted"  # nothing changed
        assert len(await bob.runs.list(tid)) == 1  # and no run was recorded for it

        inbox = httpx.get(
            f"{server.url}/wayline/approvals", headers={"x-api-key": server.keys["bob"]}
        ).json()
        mine = [q for q in inbox if q["run_id"] == tid]
        assert mine[0]["digest"] == question["digest"] and mine[0]["you_may_decide"] is False
        body = {"decision": {"approved": True}, "digest": question["digest"]}
        assert _decide(server, "bob", tid, body).status_code == 403
        stale = _decide(server, "alice", tid, {**body, "digest": "0" * 64})
        assert stale.status_code == 403 and "digest" in stale.json()["detail"]

        decided = _decide(server, "alice", tid, body)
        assert decided.status_code == 200, decided.text
        run = (await alice.runs.list(tid))[0]
        final = await alice.runs.join(tid, run["run_id"])
        assert final["receipt"]["amount"] == 4200 and final["items"] == ["paid"]

        audit = httpx.get(
            f"{server.url}/wayline/runs/{tid}/audit", headers={"x-api-key": server.keys["bob"]}
        ).json()
        lines = [(a["actor"], a["action"], a["outcome"]) for a in audit]
        assert ("bob", "decide", "refused") in lines
        assert ("alice", "decide", "accepted") in lines
        assert ("eve", "decide", "accepted") not in lines

        # eve has the role, but in another tenant: she cannot even see the run
        eve = _decide(server, "eve", tid, body)
        assert eve.status_code == 404

    asyncio.run(scenario())


def test_resume_by_command_is_decided_as_the_keys_actor(server: Running) -> None:
    async def scenario() -> None:
        alice = get_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
        tid = (await alice.threads.create())["thread_id"]
        await alice.runs.wait(tid, "refund", input={"amount": 10})
        out = as_dict(await alice.runs.wait(tid, "refund", command={"resume": {"approved": False}}))
        assert "receipt" not in out and out["decision"] == {"approved": False}
        audit = httpx.get(
            f"{server.url}/wayline/runs/{tid}/audit", headers={"x-api-key": server.keys["alice"]}
        ).json()
        assert [(a["actor"], a["outcome"]) for a in audit if a["action"] == "decide"] == [
            ("alice", "accepted")
        ]

    asyncio.run(scenario())
