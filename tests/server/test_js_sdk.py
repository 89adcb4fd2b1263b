"""``wayline serve`` driven by the JavaScript SDK (``@langchain/langgraph-sdk`` from npm,
run with node), which the published chat UIs are built on: a thread, a streamed chat turn
(``messages-tuple``: the tokens of a worker run), an interrupt and its resume, a thread
search. ``tests/server/js/sdk_check.mjs`` does the calls and prints what it saw.

The package is installed once into a cache directory (``WAYLINE_NPM_CACHE``, default
``~/.cache/wayline/npm``) from the npm registry; ``.ci/run`` installs node and npm with
apt-get where they are missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import graphs
import pytest
from harness import HERE, Running

SDK = "@langchain/langgraph-sdk@1.15.0"
NODE = shutil.which("node")
NPM = shutil.which("npm")


@pytest.fixture(scope="module")
def sdk_dir() -> Path:
    if NODE is None or NPM is None:
        pytest.skip("no node/npm: install them (apt-get install nodejs npm; .ci/run does)")
    cache = Path(os.environ.get("WAYLINE_NPM_CACHE", Path.home() / ".cache/wayline/npm"))
    where = cache / SDK.replace("/", "+")
    if not (where / "node_modules/@langchain/langgraph-sdk/package.json").exists():
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [NPM, "install", "--no-audit", "--no-fund", "--prefix", str(where), SDK],
            check=True,
            timeout=300,
            stdout=subprocess.DEVNULL,
        )
    # an ES module resolves packages beside itself: the script runs from the cache
    shutil.copy(HERE / "js" / "sdk_check.mjs", where / "sdk_check.mjs")
    return where


def _run(sdk_dir: Path, running: Running) -> dict[str, Any]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(sdk_dir / "sdk_check.mjs"), running.url, running.keys["alice"]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_js_sdk_threads_tokens_interrupt_and_resume(sdk_dir: Path, sqlite_server: Running) -> None:
    seen = _run(sdk_dir, sqlite_server)
    events = [e for e, _ in seen["chat_events"]]
    assert events[0] == "metadata" and events[-1] == "values"
    tokens = [data for e, data in seen["chat_events"] if e == "messages"]
    assert len(tokens) > 2
    assert "".join(chunk["content"] for chunk, _ in tokens) == graphs.REPLY
    assert {meta["langgraph_node"] for _, meta in tokens} == {"model"}
    assert seen["chat_state"]["values"]["messages"][-1]["content"] == graphs.REPLY

    ((kind, update),) = seen["paused_events"][1:]
    assert kind == "updates"
    assert update["__interrupt__"][0]["value"] == {"question": "send this reply?"}
    assert seen["paused_thread"]["status"] == "interrupted"
    resumed = [e for e, _ in seen["resumed_events"]]
    assert resumed[0] == "metadata" and "messages" in resumed
    contents = [m["content"] for m in seen["resumed_state"]["values"]["messages"]]
    assert contents == ["refund me", "approved: yes", graphs.REPLY]
    assert [t["thread_id"] for t in seen["searched"]] == [seen["thread"]["thread_id"]]
    assert len(seen["runs"]) == 2
