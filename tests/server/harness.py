"""A real server for the tests: uvicorn on a free loopback port, in a thread of the test
process, over a real store; and the keys the tests act with."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from graphs import compiled
from starlette.applications import Starlette

import wayline
from wayline.control.keys import create_key
from wayline.server import ServerConfig, create_app
from wayline.store.server_tables import server_tables

KEYS = {
    # name: (tenant, actor, roles, scopes)
    "alice": ("acme", "alice", ("finance",), ("execute",)),
    "bob": ("acme", "bob", (), ("execute",)),
    "reader": ("acme", "rita", (), ("read",)),
    "admin": ("acme", "root", (), ("admin",)),
    "eve": ("globex", "eve", ("finance",), ("admin",)),
}


def as_dict(value: object) -> dict[str, Any]:
    """A field of an SDK response that this test knows is one JSON object, where the
    ``langgraph-sdk`` types leave it loose: values are ``list | dict``, metadata optional,
    and this server's ``checkpoint_id`` keys are not in the SDK's TypedDicts."""
    assert isinstance(value, dict), f"expected a JSON object, got {value!r}"
    return value


@dataclasses.dataclass
class Running:
    url: str
    store: Any
    keys: dict[str, str]
    server: uvicorn.Server
    thread: threading.Thread
    app: Starlette

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def start(store_url: str, *, port: int = 0, **config: Any) -> Running:
    store = wayline.connect(store_url)
    tables = server_tables(store)
    keys = {}
    for name, (tenant, actor, roles, scopes) in KEYS.items():
        keys[name], _ = create_key(tables, tenant=tenant, actor=actor, roles=roles, scopes=scopes)
    options = {"key_cache_seconds": 0.0, "max_body_bytes": 64 * 1024, **config}
    app = create_app(store, compiled(store), ServerConfig(**options))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    # uvicorn types the grace period int; it is a timeout in seconds, and a float works.
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=0.25,  # type: ignore[arg-type]
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    return Running(f"http://127.0.0.1:{port}", store, keys, server, thread, app)


@contextlib.contextmanager
def raw_stream(
    server: Running, body: dict[str, Any], key: str = "alice"
) -> Iterator[tuple[str, httpx.Response]]:
    """A new thread and a run streamed on it over plain HTTP, as ``key``: (the thread's id,
    the open response). Unlike the SDK's stream, nothing is asked of the run after it."""
    headers = {"x-api-key": server.keys[key]}
    tid = httpx.post(f"{server.url}/threads", json={}, headers=headers).json()["thread_id"]
    url = f"{server.url}/threads/{tid}/runs/stream"
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as response:
        yield tid, response


def make_cron_due(server: Running, cron_id: str) -> None:
    """Bring a cron's next tick to now (an every-minute cron's is up to a minute away)."""
    store = server.store
    ph = store.placeholder
    with store._tx("acme") as db:
        db.execute(
            f"UPDATE schedules SET next_at = {ph} WHERE tenant_id = {ph} AND schedule_id = {ph}",
            (time.time(), "acme", cron_id),
        )


def until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy (or fail after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


HERE = Path(__file__).parent
CLI = [sys.executable, "-m", "wayline.cli.main"]


def worker_process(
    url: str, *graphs: str, kill_in_charge: bool = False, options: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """A real ``wayline worker`` serving ``graphs`` (from tests/server/graphs.py), with a
    half-second lease so that a SIGKILLed one's runs are taken over quickly."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    if kill_in_charge:
        env["WAYLINE_TEST_KILL_IN_CHARGE"] = "1"
    specs = [f"graphs:{g}" for g in graphs]
    cmd = [*CLI, "worker", *specs, "--db", url, "--lease", "0.5", "--poll", "0.05", *options]
    return subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.DEVNULL)
