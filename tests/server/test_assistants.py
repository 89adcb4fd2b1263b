"""Assistants made over the API (``/assistants``), through the real ``langgraph-sdk`` on
SQLite and PostgreSQL: created with config, context and metadata for a served graph,
changed (each change a new version), pointed back at an older version, listed by version,
searched, counted and deleted; a run started on one runs its graph with its config and
context; the served graphs stay the default assistants and cannot be changed.

Shapes as ``langgraph dev`` (langgraph-api 0.16.7) answered the same calls: the keys in
``ASSISTANT_KEYS`` and ``VERSION_KEYS``, versions newest first, a context mirrored into
``config.configurable``, a PATCH's metadata merged and its config replacing the old."""

from __future__ import annotations

import uuid

import httpx
import pytest
from harness import Running, as_dict
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)

ASSISTANT_KEYS = {
    "assistant_id", "graph_id", "config", "context", "metadata", "name", "created_at",
    "updated_at", "version", "description",
}  # fmt: skip
VERSION_KEYS = ASSISTANT_KEYS - {"updated_at"}


def test_assistant_lifecycle_and_runs_with_its_config(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    team = uuid.uuid4().hex  # the module's server is shared: this test's own assistants
    a = c.assistants.create(
        "configured",
        config={"tags": ["t"]},
        context={"model": "small"},
        metadata={"team": team},
        name="mine",
        description="d",
    )
    assert set(a) == ASSISTANT_KEYS
    assert (a["graph_id"], a["version"], a["name"], a["description"]) == (
        "configured",
        1,
        "mine",
        "d",
    )
    assert a["config"] == {"tags": ["t"], "configurable": {"model": "small"}}
    aid = a["assistant_id"]

    tid = c.threads.create()["thread_id"]
    out = as_dict(c.runs.wait(tid, aid, input={"items": []}))
    assert out["items"] == ["model=small", "context={'model': 'small'}"]
    (run,) = c.runs.list(tid)
    assert run["assistant_id"] == aid
    assert as_dict(run["metadata"])["team"] == team  # the assistant's metadata, with the run

    b = c.assistants.update(aid, config={"configurable": {"model": "large"}}, metadata={"v": 2})
    assert b["version"] == 2 and b["metadata"] == {"team": team, "v": 2}
    assert b["config"] == {"configurable": {"model": "large"}}
    tid2 = c.threads.create()["thread_id"]
    out = as_dict(c.runs.wait(tid2, aid, input={"items": []}))
    assert out["items"][0] == "model=large"
    # the run's own config goes over the assistant's
    tid3 = c.threads.create()["thread_id"]
    out = as_dict(
        c.runs.wait(tid3, aid, input={"items": []}, config={"configurable": {"model": "mine"}})
    )
    assert out["items"][0] == "model=mine"

    versions = c.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert all(set(v) == VERSION_KEYS for v in versions)
    back = c.assistants.set_latest(aid, 1)
    assert back["version"] == 1 and back["config"]["configurable"] == {"model": "small"}
    assert c.assistants.get(aid)["version"] == 1
    with pytest.raises(NotFoundError):
        c.assistants.set_latest(aid, 9)

    found = c.assistants.search(metadata={"team": team})
    assert [x["assistant_id"] for x in found] == [aid]
    by_graph = {x["assistant_id"] for x in c.assistants.search(graph_id="configured")}
    default = c.assistants.get("configured")["assistant_id"]
    assert {aid, default} <= by_graph  # the served graph stays the default assistant
    assert c.assistants.count(metadata={"team": team}) == 1

    with pytest.raises(ConflictError):
        c.assistants.create("configured", assistant_id=aid)
    same = c.assistants.create("configured", assistant_id=aid, if_exists="do_nothing")
    assert same["version"] == 1
    with pytest.raises(ConflictError):  # a served graph's assistant is not changed
        c.assistants.update(default, metadata={"x": 1})

    admin = get_sync_client(url=server.url, api_key=server.keys["admin"], timeout=30.0)
    admin.assistants.delete(aid)
    with pytest.raises(NotFoundError):
        c.assistants.get(aid)
    assert c.assistants.search(metadata={"team": team}) == []


def test_assistants_are_the_tenants_own(server: Running) -> None:
    alice = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    eve = get_sync_client(url=server.url, api_key=server.keys["eve"], timeout=30.0)
    aid = alice.assistants.create("configured", metadata={"owner": "alice"})["assistant_id"]
    with pytest.raises(NotFoundError):
        eve.assistants.get(aid)
    assert eve.assistants.search(metadata={"owner": "alice"}) == []
    tid = eve.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError, match="422"):  # the SDK's wait raises it so
        eve.runs.wait(tid, aid, input={"items": []})


def test_bad_assistant_input_is_refused(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    with pytest.raises(UnprocessableEntityError, match="not a served graph"):
        c.assistants.create("no-such-graph")
    with pytest.raises(BadRequestError, match="context"):
        c.assistants.create("configured", config={"configurable": {"a": 1}}, context={"model": "x"})
    with pytest.raises(NotFoundError):
        c.assistants.update(str(uuid.uuid4()), metadata={"a": 1})


def test_info_says_what_the_server_is(server: Running) -> None:
    """What agent-chat-ui checks first (``GET /info``); a key is needed, as elsewhere."""
    r = httpx.get(f"{server.url}/info", headers={"x-api-key": server.keys["reader"]})
    assert r.status_code == 200 and r.json()["flags"]["assistants"] is True
    assert httpx.get(f"{server.url}/info").status_code == 401
