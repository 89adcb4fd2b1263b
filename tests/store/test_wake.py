"""SQLite's wake-ups between processes (``wayline.store.wake``, ``sqlite_wake``): what is
sent, to whom, and when; a dead listener is forgotten; a bad URL option is refused."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import wayline
from wayline.errors import StoreURLError
from wayline.store.sqlite import SQLiteStore
from wayline.store.wake import WakeDir


def test_a_notice_reaches_each_listener_of_its_kind_only(tmp_path: Path) -> None:
    wake = WakeDir(str(tmp_path / "a.db"))
    assert wake.send("runs", [b"nobody"]) == 0  # no directory yet: nobody listens
    runs, work = wake.listen("runs"), wake.listen("work")
    assert runs is not None and work is not None
    try:
        assert wake.send("runs", [b"t\0r1", b"t\0r2"]) == 2
        assert runs.receive(5.0) == [b"t\0r1", b"t\0r2"]  # drained at once, in order
        assert work.receive(0.0) == []
        assert wake.send("runs", [b"x"], skip=f"-{os.getpid()}-") == 0  # the sender's own
    finally:
        runs.close()
        work.close()
        wake.close()
    assert list(wake.dir.iterdir()) == []  # a closed listener leaves no marker


def test_a_listener_that_died_is_forgotten_by_the_first_sender(tmp_path: Path) -> None:
    wake = WakeDir(str(tmp_path / "a.db"))
    wake.dir.mkdir()
    (wake.dir / "work-1-deadbeef").touch()  # a killed process's marker, nothing bound
    assert wake.send("work", [b"w"]) == 0
    assert not (wake.dir / "work-1-deadbeef").exists()


def test_a_commit_announces_after_it_commits_and_only_with_announce(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As another process's commit would (a sender skips its own process's listeners)."""
    path = tmp_path / "s.db"
    quiet = SQLiteStore(str(path))
    loud = wayline.connect(f"sqlite:///{path}?announce=1")
    assert isinstance(loud, SQLiteStore) and loud.url.endswith("?announce=1")
    listener = WakeDir(str(path)).listen("runs")
    assert listener is not None
    monkeypatch.setattr(loud, "_mine", lambda: "-another process-")
    sent: list[list[tuple[str, bytes]]] = []
    real = loud._send_notices

    def send(notices: list[tuple[str, bytes]]) -> None:
        sent.append(list(notices))
        real(notices)

    monkeypatch.setattr(loud, "_send_notices", send)
    try:
        for store in (quiet, loud):
            with store._tx("acme") as db:
                store._announce(db, [("acme", "r1"), ("acme", "r1")])
                assert listener.receive(0.0) == []  # nothing before the COMMIT
        assert listener.receive(5.0) == [b"acme\0r1"]  # once, from the announcing store
        assert sent == [[("runs", b"acme\0r1")]]
        with pytest.raises(RuntimeError), loud._tx("acme") as db:
            loud._announce(db, [("acme", "r2")])
            raise RuntimeError("rolled back")
        assert listener.receive(0.2) == []  # a rolled-back transaction announces nothing
    finally:
        listener.close()
        quiet.close()
        loud.close()


def test_a_worker_waiting_for_work_wakes_on_a_datagram(tmp_path: Path) -> None:
    """A store that waits for work listens for ``work`` notices: one from another process
    (sent here from a second handle, as that process's commit would) ends its wait."""
    path = str(tmp_path / "w.db")
    waiting = SQLiteStore(path)
    other = WakeDir(path)
    woke = threading.Event()
    try:
        waiting._work_listener()  # what its first wait_for_work does
        assert waiting.__dict__["_work_thread"], "no work listener could be bound"
        waiting._work.scanning()

        def wait() -> None:
            waiting.wait_for_work(30.0)
            woke.set()

        threading.Thread(target=wait, daemon=True).start()
        assert other.send("work", [b"w"]) == 1
        assert woke.wait(10.0)  # well before the 30 s poll
    finally:
        waiting.close()
        other.close()


def test_a_bad_announce_option_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(StoreURLError, match="announce='maybe'"):
        wayline.connect(f"sqlite:///{tmp_path / 'x.db'}?announce=maybe")


def test_closing_a_store_removes_its_work_listeners_marker(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "c.db"))
    store._work_listener()
    wake = store._wake
    assert wake is not None and [p.name[:5] for p in wake.dir.iterdir()] == ["work-"]
    store.close()
    assert list(wake.dir.iterdir()) == []


def test_a_stopping_worker_does_not_sit_out_its_poll(tmp_path: Path) -> None:
    """A worker polling once a minute (wake-ups make that reasonable) stops at once."""
    from wayline.graph import START, StateGraph
    from wayline.worker.worker import Worker, WorkerConfig

    store = SQLiteStore(str(tmp_path / "p.db"))
    g = StateGraph(dict, name="idle")
    g.add_node("a", lambda s: {})
    g.add_edge(START, "a")
    worker = Worker(store, g.compile(store), WorkerConfig(concurrency=2, poll_interval=60.0))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not store.__dict__.get("_work_thread"):  # a slot is waiting for work
            assert time.monotonic() < deadline, "no slot began to wait"
            time.sleep(0.01)
        worker.stop()
        thread.join(10)
        assert not thread.is_alive()
    finally:
        worker.stop()
        thread.join(70)
        store.close()


class _Waiting:
    """Slots of one store waiting for work in threads of their own, as idle worker slots do
    (each scanned first); 60-second timeouts, so a wait that ended within the tests'
    deadlines was ended by a notice. ``asked`` records how many slots each notice of the
    store's own asked to wake (None: every one)."""

    def __init__(self, store: SQLiteStore, slots: int, monkeypatch: pytest.MonkeyPatch) -> None:
        self.store = store
        self.woke: list[int] = []
        self.asked: list[int | None] = []
        self._lock = threading.Lock()
        notify = store._work.notify

        def recorded(slots: int | None = None) -> None:
            self.asked.append(slots)
            notify(slots)

        monkeypatch.setattr(store._work, "notify", recorded)
        for i in range(slots):
            threading.Thread(target=self._wait, args=(i,), daemon=True).start()
        _until(lambda: store._work.waiting() == slots, "the slots to wait")

    def _wait(self, i: int) -> None:
        self.store._work.scanning()
        self.store.wait_for_work(60.0)
        with self._lock:
            self.woke.append(i)


def _until(done: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def _enqueue(store: SQLiteStore, run_id: str) -> None:
    store.enqueue("default", run_id, b"input", graph_name="g", graph_version="1", durability="sync")


def test_a_start_wakes_one_waiting_slot_not_every_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each idle slot a start woke scanned for work under the write lock and found nothing
    but the one run: with four slots and one client, three wasted claims a start."""
    store = SQLiteStore(str(tmp_path / "one.db"))
    try:
        slots = _Waiting(store, 3, monkeypatch)
        _enqueue(store, "r1")
        assert slots.asked == [1]  # one slot, not all three
        _until(lambda: len(slots.woke) == 1, "a slot to wake")
        _enqueue(store, "r2")  # the next start wakes the next slot
        assert slots.asked == [1, 1]
        _until(lambda: len(slots.woke) == 2, "a second slot to wake")
        assert store._work.waiting() == 1  # the third waits on: nothing asked for it
    finally:
        store.close()


def test_a_claim_that_sees_more_work_wakes_one_more_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs started while no slot waited (every slot busy) wake nobody later; the claim that
    finds two claimable runs takes one and wakes one idle slot for the other; the claim of
    the last wakes nobody."""
    store = SQLiteStore(str(tmp_path / "peek.db"))
    try:
        _enqueue(store, "r1")
        _enqueue(store, "r2")
        slots = _Waiting(store, 2, monkeypatch)
        graphs = [("g", "1", "")]
        first = store.claim_next(owner="busy", lease_seconds=30.0, graphs=graphs)
        assert first is not None and first[0].run_id == "r1"
        assert slots.asked == [1]
        _until(lambda: len(slots.woke) == 1, "the claim to wake a slot")
        last = store.claim_next(owner="busy", lease_seconds=30.0, graphs=graphs)
        assert last is not None and last[0].run_id == "r2"
        assert store.claim_next(owner="busy", lease_seconds=30.0, graphs=graphs) is None
        assert slots.asked == [1]  # the claim of the last run saw no more: nobody woken
        assert store._work.waiting() == 1
    finally:
        store.close()
