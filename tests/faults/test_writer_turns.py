"""A SQLite writer waiting for another process's write turn waits at most the busy timeout,
then fails with a StoreError that says why, having written nothing; a holder that dies
gives the turn up at once (the kernel drops its lock). Real processes, SIGSTOP and SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from turns import holding_write_turn

import wayline
from wayline.errors import StoreError, StoreURLError

DEADLINE_S = 30.0
HOLDER = """
import sys, wayline
store = wayline.connect(sys.argv[1])
with store.write_turn():
    print("holding", flush=True)
    sys.stdin.readline()  # until the test says so
print("released", flush=True)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding the database's write turn until its stdin is closed."""
    url = f"sqlite:///{tmp_path / 'turns.db'}"
    wayline.connect(url).close()  # the schema first: the holder only takes the turn
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "holding"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(DEADLINE_S)


def _create(url: str, run_id: str) -> None:
    store = wayline.connect(url)
    try:
        store.create_run("t", run_id, graph_name="g", graph_version="1", durability="sync")
    finally:
        store.close()


def test_a_stopped_holder_makes_writes_fail_after_the_busy_timeout_not_hang(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'turns.db'}?busy_timeout_ms=300"
    holder.send_signal(signal.SIGSTOP)  # stopped inside its write
    try:
        with pytest.raises(StoreError, match=r"held the write turn of this .* for 0\.3 s"):
            _create(url, "waiting")
    finally:
        holder.send_signal(signal.SIGCONT)
    reader = wayline.connect(url, create=False)  # a reader takes no turn
    assert reader.get_run("t", "waiting") is None  # nothing was written
    reader.close()
    assert holder.stdin is not None
    holder.stdin.close()  # it releases the turn
    assert holder.stdout is not None and holder.stdout.readline().strip() == "released"
    _create(url, "after")
    assert wayline.connect(url).get_run("t", "after") is not None


def test_a_killed_holder_gives_the_turn_up_at_once(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'turns.db'}?busy_timeout_ms={int(DEADLINE_S * 1000)}"
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            _create(url, "waiting")
        except BaseException as exc:  # reported below
            errors.append(exc)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert not done.wait(0.2)  # it waits for the turn (the holder is alive)
    holder.kill()
    assert done.wait(DEADLINE_S), "the writer still waits after the holder died"
    writer.join()
    assert errors == []
    assert wayline.connect(url).get_run("t", "waiting") is not None


def test_a_writer_that_gets_the_turn_after_giving_up_passes_it_on(tmp_path: Path) -> None:
    """The waiter thread that was left waiting for a writer who gave up takes the turn when
    it comes and gives it straight back: the next writer is not locked out."""
    url = f"sqlite:///{tmp_path / 'turns.db'}"
    first, other = wayline.connect(f"{url}?busy_timeout_ms=100"), wayline.connect(url)
    try:
        with holding_write_turn(other), pytest.raises(StoreError, match="held the write turn"):
            first.create_run("t", "gave-up", graph_name="g", graph_version="1", durability="sync")
        first.create_run("t", "next", graph_name="g", graph_version="1", durability="sync")
        other.create_run("t", "other", graph_name="g", graph_version="1", durability="sync")
        assert [first.get_run("t", r) is not None for r in ("gave-up", "next", "other")] == [
            False,
            True,
            True,
        ]
    finally:
        first.close()
        other.close()


def test_a_busy_timeout_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreURLError, match="busy_timeout_ms='soon'"):
        wayline.connect(f"sqlite:///{tmp_path / 'x.db'}?busy_timeout_ms=soon")
