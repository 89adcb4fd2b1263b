"""``wayline crashtest``: the payments crash test.

For each key strategy x kill point x durability mode, N trials. A trial: a fresh payments
ledger and a fresh SQLite store; a worker process runs prepare -> charge -> finalize and is
SIGKILLed at the kill point; a fresh process resumes the run (``invoke(None, cfg)``); then
the provider's ledger says how many charges there were. The expected picture (LangGraph
1.2.22 and DBOS 3.4.0 measured the same, 5 trials a cell, 2026-11-30): killed after the provider
committed and before the step did, ``naive`` and ``uuid4`` charge twice every time; a key
that is stable across the re-execution charges once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from wayline.demo.payment_flow import KILL_POINTS
from wayline.demo.payments import PaymentsService

__all__ = [
    "DEFAULT_STRATEGIES",
    "MODES",
    "Trial",
    "TrialError",
    "TrialResult",
    "problems",
    "run_converge",
    "run_crashtest",
    "run_matrix",
    "run_trial",
]

MODES = ("sync", "async", "exit")
DEFAULT_STRATEGIES = ("naive", "uuid4", "wayline", "business")
STABLE_KEYS = frozenset({"wayline", "reconcile", "business"})
"""Strategies whose key survives a re-execution: every trial must charge exactly once."""
NO_KEY = frozenset({"naive", "uuid4"})
DUPLICATE_POINTS = ("provider_committed", "after_record")
"""Kill points at which no durability mode has committed the charge step yet: a strategy
without a stable key must charge twice there, or the harness is not seeing duplicates."""

MARKER_TIMEOUT_S = 30.0
RESUME_TIMEOUT_S = 60.0
POLL_S = 0.005


class TrialError(Exception):
    """A trial could not be carried out as planned (not a wrong charge count)."""


@dataclasses.dataclass
class TrialResult:
    strategy: str
    point: str
    mode: str
    trial: int
    charges: int | None = None
    requests: int | None = None
    deduplicated: int | None = None
    status: str | None = None
    """The run's status after the resume (``done`` when it finished)."""
    error: str | None = None
    effects: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def token(self) -> str:
        """How the trial shows in a table cell."""
        if self.error is not None or self.charges is None:
            return "E"
        return f"{self.charges}" + ("" if self.status == "done" else "*")


class Trial:
    """One trial's fresh ledger, service, store and worker processes, under ``workdir``."""

    def __init__(self, workdir: Path, strategy: str, mode: str, order: str = "order-1042"):
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.strategy = strategy
        self.mode = mode
        self.order = order
        self.service = PaymentsService(self.dir / "ledger.db").start()
        self.db = self.dir / "runs.db"
        self._procs: list[subprocess.Popen[bytes]] = []

    def _argv(self, thread: str, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "wayline.demo.crashtest_worker",
            "--db", str(self.db),
            "--service", self.service.url,
            "--strategy", self.strategy,
            "--mode", self.mode,
            "--thread", thread,
            "--order", self.order,
            *extra,
        ]  # fmt: skip

    def start(self, thread: str, point: str) -> subprocess.Popen[bytes]:
        """Start a worker that runs ``thread`` from its input and stops at ``point``."""
        marker = self.dir / f"marker-{thread}.jsonl"
        with (
            open(self.dir / f"{thread}-run.stdout", "wb") as out,
            open(self.dir / f"{thread}-run.stderr", "wb") as err,
        ):
            proc = subprocess.Popen(
                self._argv(thread, "--kill-point", point, "--marker", str(marker)),
                stdout=out,
                stderr=err,
            )
        self._procs.append(proc)
        return proc

    def kill_at(self, proc: subprocess.Popen[bytes], thread: str, point: str) -> None:
        """Make sure the worker dies by SIGKILL at ``point``: SIGKILL it once it reports it
        is blocked there, or (``provider_committed``) wait for the service to kill it."""
        marker = self.dir / f"marker-{thread}.jsonl"
        deadline = time.monotonic() + MARKER_TIMEOUT_S
        if point == "provider_committed":
            try:
                rc = proc.wait(timeout=MARKER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise TrialError(f"the service did not kill worker {proc.pid}") from None
            if rc != -signal.SIGKILL or _events(marker) != ["armed"]:
                raise TrialError(
                    f"worker ended with {rc} (marker {_events(marker)}), not killed by the "
                    f"service after its commit; stderr: {self._stderr(thread)}"
                )
            return
        while _events(marker)[-1:] != ["blocked"]:
            if proc.poll() is not None:
                raise TrialError(
                    f"worker exited with {proc.returncode} before reaching {point}; "
                    f"stderr: {self._stderr(thread)}"
                )
            if time.monotonic() > deadline:
                raise TrialError(f"worker did not reach {point} in {MARKER_TIMEOUT_S}s")
            time.sleep(POLL_S)
        os.kill(proc.pid, signal.SIGKILL)
        if proc.wait(timeout=10) != -signal.SIGKILL:
            raise TrialError(f"worker ended with {proc.returncode}, not by SIGKILL")

    def run(self, thread: str, *, resume: bool) -> dict[str, Any]:
        """Run ``thread`` to its end in a fresh process: from its input, or ``resume`` it
        with ``invoke(None, cfg)``. Returns the worker's report."""
        role = "resume" if resume else "full"
        out = self.dir / f"{thread}-{role}.json"
        with (
            open(self.dir / f"{thread}-{role}.stdout", "wb") as so,
            open(self.dir / f"{thread}-{role}.stderr", "wb") as se,
        ):
            proc = subprocess.Popen(
                self._argv(thread, "--out", str(out), *(["--resume"] if resume else [])),
                stdout=so,
                stderr=se,
            )
            self._procs.append(proc)
            try:
                proc.wait(timeout=RESUME_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise TrialError(
                    f"{role} of {thread} did not finish in {RESUME_TIMEOUT_S}s"
                ) from None
        if not out.exists():
            raise TrialError(
                f"{role} of {thread} crashed ({proc.returncode}): {self._stderr(thread, role)}"
            )
        report: dict[str, Any] = json.loads(out.read_text())
        return report

    def stats(self) -> dict[str, int]:
        return self.service.ledger.stats()

    def _stderr(self, thread: str, role: str = "run") -> str:
        path = self.dir / f"{thread}-{role}.stderr"
        text = path.read_text(errors="replace").strip() if path.exists() else ""
        return text.splitlines()[-1] if text else "(empty)"

    def close(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.service.stop()


def _events(marker: Path) -> list[str]:
    try:
        text = marker.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line)["event"] for line in text.split("\n")[:-1] if line]


def run_trial(workdir: Path, strategy: str, point: str, mode: str, trial: int = 0) -> TrialResult:
    """One trial: run, SIGKILL at ``point``, resume in a fresh process, count charges."""
    res = TrialResult(strategy, point, mode, trial)
    t0 = time.monotonic()
    t = Trial(workdir, strategy, mode)
    try:
        proc = t.start("run-1", point)
        t.kill_at(proc, "run-1", point)
        report = t.run("run-1", resume=True)
        res.status, res.effects = report["status"], report["effects"]
        if report["error"] is not None and res.status != "parked":
            res.error = f"resume: {report['error']}"
        stats = t.stats()
        res.charges, res.requests = stats["charges"], stats["requests"]
        res.deduplicated = stats["deduplicated"]
    except TrialError as exc:
        res.error = str(exc)
    finally:
        t.close()
        res.seconds = time.monotonic() - t0
    return res


def run_converge(
    workdir: Path, mode: str, point: str
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """The business key across runs: run ``run-a`` is killed at ``point``; ``run-b``, a
    different run for the same order, runs to its end; then ``run-a`` is resumed. Returns
    the provider's stats and both runs' reports (b's, then a's resume)."""
    t = Trial(workdir, "business", mode)
    try:
        t.kill_at(t.start("run-a", point), "run-a", point)
        b = t.run("run-b", resume=False)
        a = t.run("run-a", resume=True)
        return t.stats(), [b, a]
    finally:
        t.close()


def run_matrix(
    workdir: Path,
    strategies: Sequence[str],
    points: Sequence[str],
    modes: Sequence[str],
    trials: int,
    *,
    jobs: int = 1,
    on_result: Callable[[TrialResult], None] | None = None,
) -> list[TrialResult]:
    """Every (strategy, point, mode) cell, ``trials`` times, ``jobs`` trials at a time."""
    plan = [(s, p, m, i) for s in strategies for p in points for m in modes for i in range(trials)]

    def one(args: tuple[str, str, str, int]) -> TrialResult:
        s, p, m, i = args
        res = run_trial(workdir / f"{s}-{p}-{m}-{i}", s, p, m, i)
        if on_result is not None:
            on_result(res)
        return res

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, plan))


def _cells(results: Iterable[TrialResult]) -> dict[tuple[str, str, str], list[TrialResult]]:
    cells: dict[tuple[str, str, str], list[TrialResult]] = {}
    for r in results:
        cells.setdefault((r.strategy, r.point, r.mode), []).append(r)
    for trials in cells.values():
        trials.sort(key=lambda r: r.trial)
    return cells


def problems(results: Iterable[TrialResult]) -> list[str]:
    """What makes the crash test fail: a stable key that did not charge exactly once (or
    whose run did not finish), a keyless cell that should show duplicates and does not,
    and any trial the harness could not carry out."""
    found = []
    for (s, p, m), trials in _cells(results).items():
        where = f"{s} / {p} / {m}"
        errors = [r for r in trials if r.error is not None]
        for r in errors:
            found.append(f"{where} trial {r.trial}: {r.error}")
        done = [r for r in trials if r.error is None]
        if s in STABLE_KEYS:
            bad = [r for r in done if r.charges != 1 or r.status != "done"]
            if bad:
                found.append(
                    f"{where}: charges {[r.charges for r in bad]} with status "
                    f"{[r.status for r in bad]}; a stable key must charge once and finish"
                )
        elif s in NO_KEY and p in DUPLICATE_POINTS:
            missed = [r.charges for r in done if (r.charges or 0) < 2]
            if missed:
                found.append(
                    f"{where}: charges {missed} in some trials; without a stable key a "
                    "re-executed charge must be charged twice (the harness missed duplicates)"
                )
    return found


def table(results: Sequence[TrialResult], modes: Sequence[str]) -> Table:
    cells = _cells(results)
    n = max((len(v) for v in cells.values()), default=0)
    tab = Table(title=f"Charges at the provider per trial ({n} trials a cell)")
    tab.add_column("strategy")
    tab.add_column("kill point")
    for mode in modes:
        tab.add_column(mode, justify="center")
    rows = sorted({(s, p) for s, p, _ in cells}, key=_row_order)
    for s, p in rows:
        out = []
        for mode in modes:
            trials = cells.get((s, p, mode), [])
            out.append(_cell(s, p, trials))
        tab.add_row(s, p, *out)
    return tab


def _row_order(row: tuple[str, str]) -> tuple[int, int]:
    s, p = row
    order = (*DEFAULT_STRATEGIES, "reconcile")
    return (order.index(s) if s in order else 99, KILL_POINTS.index(p))


def _cell(strategy: str, point: str, trials: list[TrialResult]) -> str:
    if not trials:
        return ""
    charges = " ".join(r.token for r in trials)
    requests = " ".join("?" if r.requests is None else str(r.requests) for r in trials)
    bad = any(r.error for r in trials) or (
        strategy in STABLE_KEYS and any(r.charges != 1 or r.status != "done" for r in trials)
    )
    if bad:
        style = "bold red"
    elif any((r.charges or 0) > 1 for r in trials):
        style = "yellow"
    else:
        style = "green"
    return f"[{style}]{charges}[/]\n[dim]req {requests}[/]"


def run_crashtest(
    console: Console,
    *,
    strategies: Sequence[str],
    points: Sequence[str],
    modes: Sequence[str],
    trials: int,
    jobs: int,
    json_path: Path | None = None,
    keep: bool = False,
) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="wayline-crashtest-"))
    total = len(strategies) * len(points) * len(modes) * trials
    console.print(
        f"[bold]wayline crashtest[/]: {len(strategies)} strategies x {len(points)} kill points "
        f"x {len(modes)} durability modes x {trials} trials = {total} trials, {jobs} at a time"
    )
    t0 = time.monotonic()
    with console.status("running trials") as status:
        finished = 0

        def progress(_: TrialResult) -> None:
            nonlocal finished
            finished += 1
            status.update(f"running trials: {finished}/{total}")

        results = run_matrix(
            workdir, strategies, points, modes, trials, jobs=jobs, on_result=progress
        )
    elapsed = time.monotonic() - t0
    console.print(table(results, modes))
    console.print(
        "[dim]cells: charges at the provider per trial (req: requests it received); "
        "* the run did not finish after the resume; E the trial failed[/]"
    )
    found = problems(results)
    if json_path is not None:
        json_path.write_text(json.dumps(_json(results, found, elapsed), indent=2))
        console.print(f"[dim]results: {json_path}[/]")
    if keep:
        console.print(f"[dim]trial files: {workdir}[/]")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    console.print(f"{total} trials in {elapsed:.1f} s")
    for p in found:
        console.print(f"[red]FAIL[/] {p}")
    if not found:
        console.print(
            "[bold green]ok[/]: stable keys charged once in every trial; "
            "keyless strategies showed their duplicates"
        )
    return 1 if found else 0


def _json(results: Sequence[TrialResult], found: list[str], elapsed: float) -> dict[str, Any]:
    cells = []
    for (s, p, m), trials in _cells(results).items():
        cells.append(
            {
                "strategy": s,
                "point": p,
                "mode": m,
                "charges": [r.charges for r in trials],
                "requests": [r.requests for r in trials],
                "deduplicated": [r.deduplicated for r in trials],
                "status": [r.status for r in trials],
                "errors": [r.error for r in trials],
                "effects": [r.effects for r in trials],
                "seconds": [round(r.seconds, 3) for r in trials],
            }
        )
    return {"elapsed_s": round(elapsed, 1), "ok": not found, "problems": found, "cells": cells}


def parse_list(value: str | None, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    if not value:
        raise ValueError(f"no {what} given")
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [v for v in items if v not in allowed]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return items
