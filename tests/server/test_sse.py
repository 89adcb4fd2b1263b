"""The SSE response (``wayline.server.sse``): a stream that ends when the server begins to
stop, and picks up where it was on reconnect; a ping on a quiet stream; a stream whose
client went away lets go of its waiter."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from graphs import compiled
from harness import HERE, raw_stream, start, until
from langgraph_sdk import get_sync_client

import wayline
from wayline.server.bell import Bell
from wayline.server.sse import PING, encode_event
from wayline.server.stream import RunWatch, sse_events

CLI = [sys.executable, "-m", "wayline.cli.main"]
LONG = {"assistant_id": "slow", "input": {"n": 0, "until": 10_000}, "stream_mode": "values"}


def _events(lines: list[str]) -> list[dict[str, str]]:
    """SSE lines (as ``iter_lines`` gives them) as events: field -> value."""
    out: list[dict[str, str]] = []
    event: dict[str, str] = {}
    for line in lines:
        if not line:
            if event:
                out.append(event)
            event = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(": ")
            event[field] = value
    return out


def test_closing_the_streams_ends_them_and_a_reconnect_misses_nothing(tmp_path: Path) -> None:
    running = start(f"sqlite:///{tmp_path / 'close.db'}")
    try:
        key = running.keys["alice"]
        c = get_sync_client(url=running.url, api_key=key)
        lines: list[str] = []
        bell: Bell = running.app.state.service.bell
        with raw_stream(running, LONG) as (tid, r):
            location = r.headers["location"]
            values = 0
            for line in r.iter_lines():
                lines.append(line)
                values += line.startswith("event: values")
                if values == 3 and line.startswith("event: values"):
                    bell.close_streams()  # as `wayline serve` does when asked to stop
            # the loop ended: the server closed the stream while the run went on
        run_id = location.split("/")[-2]
        assert c.runs.get(tid, run_id)["status"] == "running"
        first = _events(lines)
        assert len([e for e in first if e["event"] == "values"]) >= 3
        last_id = first[-1]["id"]
        bell.closing = False  # the same server serves on (a new one would start open)
        with httpx.stream(
            "GET",
            f"{running.url}{location}",
            headers={"x-api-key": key, "Last-Event-ID": last_id},
            timeout=30,
        ) as r:
            more: list[str] = []
            for line in r.iter_lines():
                more.append(line)
                if [e["event"] for e in _events(more)].count("values") == 2:
                    break
        resumed = _events(more)
        ids = [int(e["id"]) for e in resumed if "id" in e]
        assert ids[:2] == [int(last_id) + 1, int(last_id) + 2]  # nothing lost, nothing twice
        c.runs.cancel(tid, run_id)
    finally:
        running.stop()


def test_a_stopping_server_ends_its_streams_without_waiting_out_the_grace(
    tmp_path: Path,
) -> None:
    """SIGTERM with a stream open: the stream closes and the process exits, without
    uvicorn cancelling tasks because its grace period ran out (it logs when it does)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    cmd = [*CLI, "serve", "slow=graphs:slow", "--db", f"sqlite:///{tmp_path / 's.db'}"]
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--dev", "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: _ok(url, proc), timeout=60, what="the server to start")
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        seen = 0
        with httpx.stream("POST", f"{url}/threads/{tid}/runs/stream", json=LONG, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("event: values"):
                    seen += 1
                    if seen == 2:
                        proc.send_signal(signal.SIGTERM)
        # uvicorn stops cleanly, then raises the signal it caught again (so -SIGTERM)
        assert proc.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert seen >= 2
    assert "Finished server process" in text, text
    assert "timeout graceful shutdown exceeded" not in text, text


def _ok(url: str, proc: subprocess.Popen[bytes]) -> bool:
    assert proc.poll() is None, "the server exited while starting"
    try:
        return httpx.get(f"{url}/ok", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_quiet_stream_is_pinged(tmp_path: Path) -> None:
    """A queued run's stream sends nothing until the run starts: pings keep it open."""
    store = wayline.connect(f"sqlite:///{tmp_path / 'ping.db'}")
    watch = RunWatch(store, compiled(store)["slow"], "acme", "never", -1, show_start=False)
    watch.starts = lambda: None  # queued behind a run that never ends

    async def first_chunks() -> list[bytes]:
        out: list[bytes] = []
        async for chunk in sse_events(watch, "r1", ["values"], ping_every=0.0):
            out.append(chunk)
            if len(out) == 3:
                break
        return out

    try:
        metadata, ping, again = asyncio.run(first_chunks())
        assert metadata.startswith(b"event: metadata\r\n")
        assert ping == again == PING
    finally:
        store.close()


def test_a_gone_client_lets_go_of_its_stream(tmp_path: Path) -> None:
    running = start(f"sqlite:///{tmp_path / 'gone.db'}")
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"])
        bell: Bell = running.app.state.service.bell
        with raw_stream(running, LONG) as (tid, r):
            run_id = r.headers["location"].split("/")[-2]
            for line in r.iter_lines():
                if line.startswith("event: values"):
                    assert bell.watching() == 1
                    break
        until(lambda: bell.watching() == 0, what="the stream to let go of its waiter")
        assert c.runs.get(tid, run_id)["status"] == "running"  # on_disconnect: continue
        c.runs.cancel(tid, run_id)
    finally:
        running.stop()


def test_an_event_name_cannot_end_its_event_early() -> None:
    assert (
        encode_event("values|a\nb:1", "{}", "7")
        == "id: 7\r\nevent: values|ab:1\r\ndata: {}\r\n\r\n"
    )
    assert encode_event("metadata", '{"a":1}') == 'event: metadata\r\ndata: {"a":1}\r\n\r\n'
