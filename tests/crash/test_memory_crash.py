"""Long-term memory under SIGKILL: a worker killed between a node's store write and its
step's commit leaves no item; the resumed run writes it once; a fresh process reads it; a
zombie that lost its lease writes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wayline.memory import DurableStore

HERE = Path(__file__).resolve().parent
DEADLINE_S = 60.0

pytestmark = pytest.mark.crash


def _child(tmp: Path, *args: str) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    argv = [sys.executable, str(HERE / "memory_child.py"), *args, "--db", str(tmp / "runs.db")]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"child exited early: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no marker {path} within {DEADLINE_S}s")
        time.sleep(0.005)


def test_a_kill_between_write_and_commit_leaves_no_item(tmp_path: Path) -> None:
    marker = tmp_path / "wrote"
    first = _child(tmp_path, "run", "--label", "first", "--marker", str(marker))
    try:
        _wait_for(marker, first)
        first.send_signal(signal.SIGKILL)
        first.wait(DEADLINE_S)
    finally:
        if first.poll() is None:
            first.kill()
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert DurableStore(url).record(("prefs", "u1"), "drink") is None
    resumed = _child(tmp_path, "resume", "--label", "second")
    out, err = resumed.communicate(timeout=DEADLINE_S)
    assert resumed.returncode == 0, err
    store = DurableStore(url)
    row = store.record(("prefs", "u1"), "drink")
    assert row is not None and row.value == {"drink": "tea", "by": "second"}
    assert (row.run_id, row.step, row.node) == ("memory-run", 1, "remember")
    assert store.history(("prefs", "u1"), "drink") == []  # written once, never replaced
    reader = _child(tmp_path, "read", "--label", "reader")
    out, err = reader.communicate(timeout=DEADLINE_S)
    assert reader.returncode == 0, err
    assert json.loads(out) == {"value": {"drink": "tea", "by": "second"}, "run_id": "memory-run"}


def test_a_zombie_writes_nothing(tmp_path: Path) -> None:
    marker, go = tmp_path / "wrote", tmp_path / "go"
    zombie = _child(
        tmp_path, "run", "--label", "zombie", "--marker", str(marker), "--go-file", str(go)
    )
    try:
        _wait_for(marker, zombie)
        taker = _child(tmp_path, "resume", "--label", "taker")  # steals the lease, finishes
        _, err = taker.communicate(timeout=DEADLINE_S)
        assert taker.returncode == 0, err
        go.write_text("go")
        out, err = zombie.communicate(timeout=DEADLINE_S)
    finally:
        if zombie.poll() is None:
            zombie.kill()
    assert zombie.returncode == 3, (out, err)
    assert out.strip() == b"lease lost"
    store = DurableStore(f"sqlite:///{tmp_path / 'runs.db'}")
    row = store.record(("prefs", "u1"), "drink")
    assert row is not None and row.value["by"] == "taker"
    assert store.history(("prefs", "u1"), "drink") == []  # the zombie's write never landed
