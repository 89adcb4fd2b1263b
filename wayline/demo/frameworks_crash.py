"""The reference crash test across frameworks: prepare -> charge -> finalize in LangGraph,
LlamaIndex Workflows, CrewAI Flows and wayline, each plain (its own documented persistence,
no key) and on wayline, SIGKILLed at one point, resumed by a fresh process; the local
payments service counts the charges.

Kill points: ``before_charge`` (the request has not left), ``after_charge`` (the provider
committed the charge and killed the process before answering: the framework has not
recorded the step), ``after_record`` (the charge step is recorded: killed at the start of
finalize). Each trial gets a fresh ledger and fresh stores. The children are modules of
the integration packages (each the only one importing its framework), run as processes;
this module imports none of them.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from wayline.demo.payments import PaymentsService

__all__ = [
    "ARMS",
    "CHILDREN",
    "FRAMEWORKS",
    "POINTS",
    "FrameworkTrial",
    "expected",
    "run_framework_matrix",
    "run_framework_trial",
]

CHILDREN = {
    "langgraph": "wayline.langgraph.payment_flow",
    "llamaindex": "wayline.llamaindex.payment_flow",
    "crewai": "wayline.crewai.payment_flow",
    "wayline": "wayline.demo.frameworks_child",
}
FRAMEWORKS = tuple(CHILDREN)
ARMS = ("plain", "wayline")
POINTS = ("before_charge", "after_charge", "after_record")
_SWITCH = {
    "before_charge": "before_charge",
    "after_charge": "provider_committed",
    "after_record": "after_commit",
}
"""Each kill point as ``wayline.demo.payment_flow.KillSwitch`` names it."""
TIMEOUT_S = 120.0
POLL_S = 0.005


def expected(framework: str, arm: str, point: str) -> int:
    """Charges the reference text measured: twice after the charge without a key (and, for
    CrewAI's ``@persist``, after the record too: its resume runs the Flow from its first
    method); once everywhere on wayline."""
    if arm == "wayline" or point == "before_charge":
        return 1
    if point == "after_charge":
        return 2
    return 2 if framework == "crewai" else 1


@dataclasses.dataclass
class FrameworkTrial:
    framework: str
    arm: str
    point: str
    trial: int
    charges: int | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def token(self) -> str:
        return "E" if self.charges is None else str(self.charges)


def _events(marker: Path) -> list[str]:
    if not marker.exists():
        return []
    return [json.loads(line)["event"] for line in marker.read_text().splitlines() if line]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    env.setdefault("CREWAI_TRACING_ENABLED", "false")
    env.setdefault("OTEL_SDK_DISABLED", "true")
    return env


def run_framework_trial(
    framework: str, arm: str, point: str, trial: int, workdir: Path
) -> FrameworkTrial:
    """One trial: run until killed at ``point``, resume in a fresh process, count."""
    result = FrameworkTrial(framework, arm, point, trial)
    started = time.monotonic()
    d = workdir / f"{framework}-{arm}-{point}-{trial}"
    d.mkdir(parents=True, exist_ok=True)
    marker = d / "marker.jsonl"
    with PaymentsService(d / "ledger.db") as svc:
        base = [sys.executable, "-m", CHILDREN[framework], "--arm", arm, "--dir", str(d),
                "--service", svc.url]  # fmt: skip
        try:
            with open(d / "run.stderr", "wb") as err:
                proc = subprocess.Popen(
                    [*base, "--point", _SWITCH[point], "--marker", str(marker)],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=_child_env(),
                )
            try:
                _kill_at(proc, marker, _SWITCH[point], d)
            finally:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
            out = d / "resume.json"
            with open(d / "resume.stderr", "wb") as err:
                rc = subprocess.run(
                    [*base, "--resume", "--out", str(out)],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=_child_env(),
                    timeout=TIMEOUT_S,
                    check=False,
                ).returncode
            if rc != 0 or not out.exists():
                raise RuntimeError(f"resume exited {rc}: {_last_line(d / 'resume.stderr')}")
            result.charges = svc.ledger.stats()["charges"]
        except Exception as exc:
            result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.monotonic() - started
    return result


def _kill_at(proc: subprocess.Popen[bytes], marker: Path, switch: str, d: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    if switch == "provider_committed":  # the service SIGKILLs it after committing
        rc = proc.wait(timeout=TIMEOUT_S)
        if rc != -signal.SIGKILL:
            raise RuntimeError(f"run exited {rc}, not killed: {_last_line(d / 'run.stderr')}")
        return
    while _events(marker) != ["blocked"]:
        if proc.poll() is not None:
            raise RuntimeError(
                f"run exited {proc.returncode} before the kill point: "
                f"{_last_line(d / 'run.stderr')}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError("the run did not reach the kill point")
        time.sleep(POLL_S)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _last_line(path: Path) -> str:
    text = path.read_text(errors="replace").strip() if path.exists() else ""
    return text.splitlines()[-1] if text else "(empty)"


def run_framework_matrix(
    frameworks: Sequence[str],
    *,
    arms: Sequence[str] = ARMS,
    points: Sequence[str] = POINTS,
    trials: int = 5,
    workdir: Path | None = None,
    keep: bool = False,
    progress: Callable[[FrameworkTrial], None] | None = None,
) -> list[FrameworkTrial]:
    """Every (framework, arm, point) cell ``trials`` times, one trial at a time."""
    root = workdir or Path(tempfile.mkdtemp(prefix="wayline-frameworks-"))
    results: list[FrameworkTrial] = []
    try:
        for fw in frameworks:
            for arm in arms:
                for point in points:
                    for n in range(trials):
                        r = run_framework_trial(fw, arm, point, n, root)
                        results.append(r)
                        if progress is not None:
                            progress(r)
    finally:
        if not keep and workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    return results


def table_rows(results: Sequence[FrameworkTrial]) -> list[dict[str, Any]]:
    """One row per (framework, arm, point): the charges of each trial, and the expectation."""
    cells: dict[tuple[str, str, str], list[FrameworkTrial]] = {}
    for r in results:
        cells.setdefault((r.framework, r.arm, r.point), []).append(r)
    return [
        {
            "framework": fw,
            "arm": arm,
            "point": point,
            "charges": [r.token for r in rs],
            "expected": expected(fw, arm, point),
            "ok": all(r.charges == expected(fw, arm, point) for r in rs),
            "errors": [r.error for r in rs if r.error],
        }
        for (fw, arm, point), rs in cells.items()
    ]
