"""SIGKILL a process running a subgraph (mid-child) or an entrypoint (mid-task); a fresh
process resumes to the result of an uninterrupted run, and what had committed (child
steps, finished tasks) does not run again: only the step in flight runs twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import compat_child
import pytest

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 30.0

pytestmark = pytest.mark.crash


def child(tmp: Path, *args: str, durability: str = "sync") -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["WAYLINE_COMPAT_DURABILITY"] = durability
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, str(HERE / "compat_child.py"), *args],
        stdout=subprocess.PIPE,
        stderr=open(tmp / f"{args[0]}.stderr", "wb"),
        env=env,
    )


def wait_marker(proc: subprocess.Popen[bytes], marker: Path, tmp: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not compat_child.read(str(marker)):
        if proc.poll() is not None:
            pytest.fail(f"child exited first: {(tmp / 'run.stderr').read_text()}")
        if time.monotonic() > deadline:
            pytest.fail("child never reached its kill point")
        time.sleep(0.005)


def finish(proc: subprocess.Popen[bytes], tmp: Path, role: str) -> object:
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, (tmp / f"{role}.stderr").read_text()
    return json.loads(out)


@pytest.mark.parametrize(
    ("kind", "durability", "block", "twice"),
    [
        ("subgraph", "sync", "s2", ["s2"]),
        ("entrypoint", "sync", "t2", ["t2"]),
        # exit: steps are committed only at the end (the parent's and the child's), so
        # they run again; a task's result is recorded when it finishes, whatever the mode
        ("subgraph", "exit", "s2", ["prep", "s0", "s1", "s2"]),
        ("entrypoint", "exit", "t2", ["t2"]),
    ],
)
def test_killed_mid_run_resumes_in_a_fresh_process(
    kind: str, durability: str, block: str, twice: list[str], tmp_path: Path
) -> None:
    base = tmp_path / "baseline"
    base.mkdir()
    expected = finish(
        child(base, "run", kind, str(base / "runs.db"), str(base / "log.jsonl")), base, "run"
    )  # the uninterrupted baseline
    baseline_log = [r["name"] for r in compat_child.read(str(base / "log.jsonl"))]

    db, log, marker = tmp_path / "runs.db", tmp_path / "log.jsonl", tmp_path / "marker.jsonl"
    proc = child(
        tmp_path, "run", kind, str(db), str(log), str(marker), block, durability=durability
    )
    try:
        wait_marker(proc, marker, tmp_path)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stdout is not None:
            proc.stdout.close()
    resumer = child(tmp_path, "resume", kind, str(db), str(log), durability=durability)
    resumed = finish(resumer, tmp_path, "resume")

    assert resumed == expected
    ran = [r["name"] for r in compat_child.read(str(log))]
    assert sorted(set(ran)) == sorted(set(baseline_log))
    again = {name: ran.count(name) for name in set(ran) if ran.count(name) > 1}
    assert again == dict.fromkeys(twice, 2), f"only {twice} may run twice: {ran}"
