"""Crash-test plumbing: child processes, kill points, and what survived a kill."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import child_graph
import pytest

HERE = Path(__file__).resolve().parent

CHILD_SCRIPT = HERE / "child_graph.py"
MARKER_TIMEOUT_S = 30.0
RESUME_TIMEOUT_S = 60.0
POLL_S = 0.005


@dataclasses.dataclass
class CrashRun:
    """Files of one crash scenario, all under the test's tmp_path."""

    tmp: Path
    graph: str
    mode: str
    thread: str = "run-1"
    started: list[subprocess.Popen[bytes]] = dataclasses.field(default_factory=list)
    markers: dict[int, str] = dataclasses.field(default_factory=dict)
    labels: dict[int, str] = dataclasses.field(default_factory=dict)

    @property
    def db(self) -> str:
        return str(self.tmp / "runs.db")

    @property
    def exec_log(self) -> str:
        return str(self.tmp / "executions.jsonl")

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db}"

    def _argv(self, role: str, label: str, extra: list[str]) -> list[str]:
        return [
            sys.executable,
            str(CHILD_SCRIPT),
            role,
            "--label", label,
            "--graph", self.graph,
            "--db", self.db,
            "--thread", self.thread,
            "--mode", self.mode,
            "--exec-log", self.exec_log,
            *extra,
        ]  # fmt: skip

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
        return env

    # -- the child that gets killed -----------------------------------------------------

    def start(
        self, *extra: str, role: str = "run", label: str | None = None
    ) -> subprocess.Popen[bytes]:
        """Start a child that is meant to be killed: the first run (``role="run"``, with its
        input) or a resume. ``label`` tags its executions (default: the role)."""
        label = label or role
        marker = str(self.tmp / f"marker-{label}.jsonl")
        with (
            open(self.tmp / f"{label}.stdout", "wb") as out,
            open(self.tmp / f"{label}.stderr", "wb") as err,
        ):
            proc = subprocess.Popen(
                self._argv(role, label, ["--marker", marker, *extra]),
                stdout=out,
                stderr=err,
                env=self._env(),
            )
        self.started.append(proc)
        self.markers[proc.pid] = marker
        self.labels[proc.pid] = label
        return proc

    def wait_for_marker(
        self, proc: subprocess.Popen[bytes], timeout: float = MARKER_TIMEOUT_S
    ) -> dict[str, Any]:
        """Poll the marker file until the child reports its kill point; fail on timeout or
        if the child exits first."""
        deadline = time.monotonic() + timeout
        label = self.labels[proc.pid]
        while True:
            lines = child_graph.read_lines(self.markers[proc.pid])
            if lines:
                assert len(lines) == 1, f"expected one marker line, got {lines}"
                return lines[0]
            if proc.poll() is not None:
                pytest.fail(
                    f"child exited with {proc.returncode} before reaching its kill point; "
                    f"stderr:\n{self.stderr(label)}"
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"no marker from child {proc.pid} within {timeout}s; "
                    f"executions so far: {self.executions()}; stderr:\n{self.stderr(label)}"
                )
            time.sleep(POLL_S)

    def sigkill(self, proc: subprocess.Popen[bytes]) -> None:
        os.kill(proc.pid, signal.SIGKILL)
        rc = proc.wait(timeout=10)
        assert rc == -signal.SIGKILL, f"child ended with {rc}, not by SIGKILL"

    # -- the fresh process that resumes -------------------------------------------------

    def resume(self, label: str = "resume") -> dict[str, Any]:
        """``invoke(None, cfg)`` in a fresh process, to the end; return its JSON report."""
        out = self.tmp / f"{label}.json"
        with (
            open(self.tmp / f"{label}.stdout", "wb") as so,
            open(self.tmp / f"{label}.stderr", "wb") as se,
        ):
            proc = subprocess.Popen(
                self._argv("resume", label, ["--out", str(out)]),
                stdout=so,
                stderr=se,
                env=self._env(),
            )
            self.started.append(proc)
            try:
                rc = proc.wait(timeout=RESUME_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"resume did not finish in {RESUME_TIMEOUT_S}s")
        assert rc == 0, f"resume failed with {rc}; stderr:\n{self.stderr(label)}"
        report: dict[str, Any] = json.loads(out.read_text())
        return report

    # -- reading what survived ----------------------------------------------------------

    def stderr(self, role: str) -> str:
        path = self.tmp / f"{role}.stderr"
        return path.read_text(errors="replace") if path.exists() else ""

    def executions(self, label: str | None = None) -> list[tuple[str, int]]:
        """(node, n) of every node execution (of the child labelled ``label``), in the
        order they were logged."""
        return [
            (r["node"], r["n"])
            for r in child_graph.read_lines(self.exec_log)
            if label is None or r["label"] == label
        ]

    def durable(self) -> dict[str, Any]:
        """The run as the store holds it now, read in this process through the public API."""
        app = child_graph.build(self.graph, self.url, None)
        try:
            rep = child_graph.report(app, child_graph.config(self.thread), None)
            state = app.get_state(child_graph.config(self.thread))
            rep["tasks"] = {t.name: t.result for t in state.tasks}
            return rep
        finally:
            app.store.close()

    def kill_leftovers(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def run_baseline(tmp: Path, graph: str, mode: str) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    """An uninterrupted run, in this process, on a database of its own."""
    base = tmp / "baseline"
    base.mkdir()
    log = str(base / "executions.jsonl")
    probe = child_graph.Probe(role="baseline", exec_log=log)
    app = child_graph.build(graph, f"sqlite:///{base / 'runs.db'}", probe)
    cfg = child_graph.config("baseline")
    try:
        result = app.invoke(child_graph.graph_input(graph), cfg, durability=mode)
        rep = child_graph.report(app, cfg, result)
    finally:
        app.store.close()
    return rep, [(r["node"], r["n"]) for r in child_graph.read_lines(log)]
