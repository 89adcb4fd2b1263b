"""A stream, ``runs/wait``, ``join`` and a multitask interrupt or rollback wake when the
run commits, not when a timer says (``wayline.server.bell``).

Every server here has a fallback poll of 60 seconds, longer than the SDK's timeout: a wait
that finished in time was woken by the commits (in this process, or a NOTIFY from a worker
process on PostgreSQL), and the bell's counts say what ended each wait: no timer at all."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import graphs
from graphs import compiled
from harness import start, until, worker_process
from langgraph_sdk import get_sync_client
from pg import schema_url

from wayline.server.bell import Bell
from wayline.server.stream import RunWatch, sse_events

STEPS = 5
FALLBACK = 60.0


def _stream(url: str, key: str) -> list[dict[str, Any]]:
    c = get_sync_client(url=url, api_key=key, timeout=30.0)
    tid = c.threads.create()["thread_id"]
    parts = c.runs.stream(tid, "slow", input={"n": 0, "until": STEPS}, stream_mode="values")
    return [p.data for p in parts if p.event == "values"]


def test_in_process_commits_wake_the_stream_with_no_timer(tmp_path: Path) -> None:
    running = start(f"sqlite:///{tmp_path / 'wake.db'}", stream_fallback=FALLBACK)
    try:
        values = _stream(running.url, running.keys["alice"])
        bell: Bell = running.app.state.service.bell
        assert [v["n"] for v in values] == list(range(STEPS + 1))  # input, then each step
        assert bell.counts["timer"] == 0
        assert bell.counts["rung"] >= STEPS  # one wake-up a commit at least (some batched)
        assert bell.watching() == 0  # the stream's waiter left with it
    finally:
        running.stop()


def test_what_one_read_finds_goes_out_in_one_write(tmp_path: Path) -> None:
    """Each read of the run is one write to the client, however many events it found: a
    finished run's stream is two (the metadata, then all its steps)."""
    running = start(f"sqlite:///{tmp_path / 'batch.db'}", stream_fallback=FALLBACK)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        c.runs.wait(tid, "slow", input={"n": 0, "until": STEPS})
        graph = compiled(running.store)["slow"]
        watch = RunWatch(running.store, graph, "acme", tid, -1, show_start=False)

        async def chunks() -> list[bytes]:
            return [chunk async for chunk in sse_events(watch, "r1", ["values"])]

        written = asyncio.run(chunks())
        assert len(written) == 2
        events = [
            dict(line.split(": ", 1) for line in block.splitlines())
            for block in b"".join(written).decode().split("\r\n\r\n")
            if block
        ]
        assert [e["event"] for e in events] == ["metadata"] + ["values"] * (STEPS + 1)
        assert [json.loads(e["data"])["n"] for e in events[1:]] == list(range(STEPS + 1))
    finally:
        running.stop()


def test_a_notify_from_a_worker_process_wakes_a_postgres_stream(pg_base_url: str) -> None:
    url = schema_url(pg_base_url)
    running = start(url, workers=0, stream_fallback=FALLBACK)
    worker = worker_process(url + "&announce=1" if "?" in url else url + "?announce=1", "slow")
    try:
        values = _stream(running.url, running.keys["alice"])
        bell: Bell = running.app.state.service.bell
        assert [v["n"] for v in values] == list(range(STEPS + 1))
        assert bell.counts["timer"] == 0  # every wait ended by the worker's NOTIFY
        assert bell.counts["rung"] >= STEPS
    finally:
        worker.kill()
        worker.wait(10)
        running.stop()


def test_wait_join_and_multitask_wake_on_in_process_commits(tmp_path: Path) -> None:
    running = start(f"sqlite:///{tmp_path / 'wait.db'}", stream_fallback=FALLBACK)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        bell: Bell = running.app.state.service.bell
        tid = c.threads.create()["thread_id"]
        waited = c.runs.wait(tid, "slow", input={"n": 0, "until": STEPS})
        assert isinstance(waited, dict) and waited["n"] == STEPS
        after_wait = bell.counts["rung"]
        assert after_wait >= 1
        run = c.runs.create(tid, "slow", input={"until": 2 * STEPS})
        joined = c.runs.join(tid, run["run_id"])
        assert joined["n"] == 2 * STEPS
        assert bell.counts["rung"] > after_wait
        long = c.runs.create(tid, "slow", input={"until": 1000})  # 50 s of steps
        took = c.runs.create(tid, "slow", input={"until": 0}, multitask_strategy="interrupt")
        assert c.runs.get(tid, long["run_id"])["status"] == "interrupted"
        c.runs.join(tid, took["run_id"])
        gone = c.runs.create(tid, "slow", input={"until": 1000})
        until(lambda: c.runs.get(tid, gone["run_id"])["status"] == "running", what="running")
        later = c.runs.wait(tid, "slow", input={"until": 0}, multitask_strategy="rollback")
        assert isinstance(later, dict) and later["n"] < 1000
        assert gone["run_id"] not in {r["run_id"] for r in c.runs.list(tid, limit=100)}
        assert bell.counts["timer"] == 0  # every wait ended by a commit, none by the timer
        assert bell.watching() == 0
    finally:
        running.stop()


def test_a_notify_from_a_worker_process_wakes_a_postgres_wait(pg_base_url: str) -> None:
    url = schema_url(pg_base_url)
    running = start(url, workers=0, stream_fallback=FALLBACK)
    worker = worker_process(url + "&announce=1" if "?" in url else url + "?announce=1", "slow")
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        waited = c.runs.wait(tid, "slow", input={"n": 0, "until": STEPS})
        bell: Bell = running.app.state.service.bell
        assert isinstance(waited, dict) and waited["n"] == STEPS
        assert bell.counts["timer"] == 0  # the wait ended by the worker's NOTIFY
        assert bell.counts["rung"] >= 1
    finally:
        worker.kill()
        worker.wait(10)
        running.stop()


def test_datagrams_wake_a_sqlite_worker_process_and_the_servers_stream(tmp_path: Path) -> None:
    """SQLite's wake-ups between processes (``wayline.store.wake``): the run's start wakes
    a worker process that polls once a minute, and its announcing commits wake the
    server's stream, whose timer is a minute too."""
    url = f"sqlite:///{tmp_path / 'wake.db'}"
    running = start(url, workers=0, stream_fallback=FALLBACK)
    worker = worker_process(url + "?announce=1", "slow", options=("--poll", "60"))
    try:
        until(lambda: list((tmp_path / "wake.db-wayline-wake").glob("work-*")), what="listening")
        values = _stream(running.url, running.keys["alice"])
        bell: Bell = running.app.state.service.bell
        assert [v["n"] for v in values] == list(range(STEPS + 1))
        assert bell.counts["timer"] == 0  # every wait of the stream ended by a datagram
        assert bell.counts["rung"] >= 1
    finally:
        worker.kill()
        worker.wait(10)
        running.stop()


def test_a_commit_wakes_only_its_own_tenants_run() -> None:
    async def scenario() -> tuple[bool, bool]:
        bell = Bell()
        acme = bell.subscribe("acme", "run-1")
        globex = bell.subscribe("globex", "run-1")
        bell.ring([("globex", "run-1")])  # the same run id in another tenant
        woke_acme = await acme.wait(0.05)
        woke_globex = await globex.wait(5.0)
        acme.close()
        globex.close()
        return woke_acme, woke_globex

    woke_acme, woke_globex = asyncio.run(scenario())
    assert (woke_acme, woke_globex) == (False, True)


def test_a_ring_while_the_stream_reads_wakes_its_next_wait() -> None:
    async def scenario() -> bool:
        bell = Bell()
        waiter = bell.subscribe("acme", "r")
        waiter.clear()  # the stream reads its run now ...
        bell.ring([("acme", "r")])  # ... and the run commits meanwhile
        await asyncio.sleep(0)  # the ring reaches the loop
        woke = await waiter.wait(5.0)
        waiter.close()
        return woke

    assert asyncio.run(scenario()) is True


class _Recorded(RunWatch):
    """Records, for each read, whether it was made on the event loop's thread."""

    on_loop: list[bool]

    def poll(self) -> list[Any]:
        self.on_loop.append(threading.current_thread() is threading.main_thread())
        if len(self.on_loop) == 2:
            graphs.HOLD.set()  # the run was held before its last step: it may end now
        return super().poll()


def _reads_of_a_held_run(
    store_url: str, *, after_a_run: bool = False
) -> tuple[list[bool], list[int]]:
    """Whether each read of a held run's stream was on the loop, and the values it sent;
    ``after_a_run``: on a thread an earlier run left steps on (its state is reconstructed)."""
    running = start(store_url, stream_fallback=FALLBACK)
    graphs.HOLD.clear()
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        begun = -1
        if after_a_run:
            c.runs.wait(tid, "slow", input={"n": 0, "until": 1})
            earlier = running.store.get_run("acme", tid)
            assert earlier is not None and earlier.step > 0
            begun = earlier.step
        c.runs.create(tid, "slow", input={"n": 0, "until": STEPS, "hold": True})
        graph = compiled(running.store)["slow"]
        watch = _Recorded(running.store, graph, "acme", tid, begun, show_start=False)
        watch.on_loop = []
        bell: Bell = running.app.state.service.bell

        async def chunks() -> list[bytes]:
            stream = sse_events(watch, "r1", ["values"], bell=bell, fallback=FALLBACK)
            return [chunk async for chunk in stream]

        body = b"".join(asyncio.run(chunks())).decode()
        values = [
            json.loads(line[len("data: ") :])["n"]
            for block in body.split("\r\n\r\n")
            if "event: values" in block
            for line in block.splitlines()
            if line.startswith("data: ")
        ]
        return watch.on_loop, values
    finally:
        graphs.HOLD.set()
        running.stop()


def test_a_sqlite_streams_later_reads_are_made_on_the_event_loop(tmp_path: Path) -> None:
    """On a thread with steps, the first read (the state so far, reconstructed) goes to a
    thread; each read after it, of the steps since, is made on the loop: a hop to a thread
    cost more than those reads."""
    on_loop, values = _reads_of_a_held_run(f"sqlite:///{tmp_path / 'loop.db'}", after_a_run=True)
    assert values == list(range(STEPS + 1))
    assert len(on_loop) >= 2
    assert on_loop[0] is False and all(on_loop[1:])


def test_a_sqlite_stream_on_a_new_thread_reads_on_the_loop_from_the_first(
    tmp_path: Path,
) -> None:
    """A run that began a thread has no state to reconstruct: its first read is as small
    as the later ones, and made on the loop too."""
    on_loop, values = _reads_of_a_held_run(f"sqlite:///{tmp_path / 'new.db'}")
    assert values == list(range(STEPS + 1))
    assert len(on_loop) >= 2 and all(on_loop)


def test_a_postgres_streams_reads_all_go_to_a_thread(pg_base_url: str) -> None:
    on_loop, values = _reads_of_a_held_run(schema_url(pg_base_url))
    assert values == list(range(STEPS + 1))
    assert len(on_loop) >= 2 and not any(on_loop)


def test_a_stream_reads_the_threads_queue_only_when_its_run_row_moves(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Whether a run queued behind took the thread on needs a claim of the run's row, so a
    stream asks the queue at its first read and when the row's fencing token moved (the
    run's claim), not at each of its reads."""
    running = start(f"sqlite:///{tmp_path / 'queue.db'}", stream_fallback=FALLBACK)
    svc = running.app.state.service
    asked: list[str] = []
    reads: list[int] = []
    queued_end = svc.queued_end

    def counted_queued_end(*args: Any) -> Any:
        asked.append(threading.current_thread().name)
        return queued_end(*args)

    poll = RunWatch.poll

    def counted_poll(self: RunWatch) -> Any:
        reads.append(self.step)
        return poll(self)

    monkeypatch.setattr(svc, "queued_end", counted_queued_end)
    monkeypatch.setattr(RunWatch, "poll", counted_poll)
    try:
        c = get_sync_client(url=running.url, api_key=running.keys["alice"], timeout=30.0)
        tid = c.threads.create()["thread_id"]
        parts = c.runs.stream(tid, "slow", input={"n": 0, "until": 20}, stream_mode="values")
        values = [p.data["n"] for p in parts if p.event == "values"]
        assert values == list(range(21))
        # a second of commits 50 ms apart: read many times, under any load
        assert len(reads) >= 3
        assert 1 <= len(asked) <= 2  # the first read, and after the run's claim
    finally:
        running.stop()
