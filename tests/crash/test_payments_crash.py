"""The payments crash test, sampled: the same harness as ``wayline crashtest``, a few cells.

A worker runs prepare -> charge -> finalize against a local payments service and is
SIGKILLed at a kill point; a fresh process resumes the run; the provider's ledger counts
the charges. Without a stable key the re-executed charge node charges again; with
``ctx.effect`` (derived or business key) it charges once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wayline.demo.crashtest import TrialResult, problems, run_converge, run_trial

pytestmark = pytest.mark.crash


def test_naive_charges_twice_when_killed_after_the_provider_committed(tmp_path: Path) -> None:
    r = run_trial(tmp_path, "naive", "provider_committed", "sync")
    assert r.error is None, r.error
    assert (r.charges, r.requests, r.status) == (2, 2, "done")


def test_uuid4_made_in_the_node_charges_twice_when_killed_after_the_call(tmp_path: Path) -> None:
    r = run_trial(tmp_path, "uuid4", "after_record", "sync")
    assert r.error is None, r.error
    assert (r.charges, r.requests, r.deduplicated) == (2, 2, 0), "a new key on re-execution"


@pytest.mark.parametrize("mode", ["sync", "exit"])
def test_wayline_key_after_the_provider_committed_resends_under_the_same_key(
    tmp_path: Path, mode: str
) -> None:
    """The worker died between dispatch and record: the resume finds the effect EXECUTING,
    resends it (idempotent=True) under the same key, and the provider deduplicates."""
    r = run_trial(tmp_path, "wayline", "provider_committed", mode)
    assert r.error is None, r.error
    assert (r.charges, r.requests, r.deduplicated, r.status) == (1, 2, 1, "done")
    [effect] = r.effects
    assert effect["status"] == "SUCCEEDED" and effect["attempt"] == 2


@pytest.mark.parametrize("mode", ["sync", "exit"])
def test_wayline_key_after_the_record_returns_the_recorded_result(
    tmp_path: Path, mode: str
) -> None:
    """The result was recorded before the kill: the re-executed node gets it back and does
    not call the provider again, even under ``exit`` where the step itself was not durable."""
    r = run_trial(tmp_path, "wayline", "after_record", mode)
    assert r.error is None, r.error
    assert (r.charges, r.requests, r.status) == (1, 1, "done")
    assert [(e["status"], e["attempt"]) for e in r.effects] == [("SUCCEEDED", 1)]


def test_reconcile_settles_an_unknown_outcome_by_asking_the_provider(tmp_path: Path) -> None:
    r = run_trial(tmp_path, "reconcile", "provider_committed", "sync")
    assert r.error is None, r.error
    assert (r.charges, r.requests, r.status) == (1, 1, "done"), "asked, not resent"


@pytest.mark.parametrize("point", ["after_record", "provider_committed"])
def test_business_key_converges_two_runs_on_one_charge(tmp_path: Path, point: str) -> None:
    """Run a is killed around the charge; run b (another thread, same order) runs to its
    end; run a resumes. One charge, and both runs hold it."""
    stats, reports = run_converge(tmp_path, "sync", point)
    assert stats["charges"] == 1, stats
    assert [r["status"] for r in reports] == ["done", "done"]
    ids = {r["result"]["payment"]["id"] for r in reports}
    assert len(ids) == 1
    if point == "after_record":  # recorded by a: b and a's resume read it, nothing resent
        assert stats["requests"] == 1


def _result(strategy: str, point: str, charges: int, status: str = "done") -> TrialResult:
    return TrialResult(strategy, point, "sync", 0, charges=charges, requests=charges, status=status)


def test_problems_are_what_fails_the_crash_test() -> None:
    assert (
        problems([_result("naive", "after_record", 2), _result("wayline", "after_record", 1)]) == []
    )
    assert problems([_result("naive", "before_charge", 1)]) == []
    [missed] = problems([_result("uuid4", "provider_committed", 1)])
    assert "missed duplicates" in missed
    [twice] = problems([_result("business", "after_commit", 2)])
    assert "must charge once" in twice
    [parked] = problems([_result("wayline", "provider_committed", 1, status="parked")])
    assert "parked" in parked
    err = TrialResult("naive", "after_record", "exit", 3, error="worker did not reach it")
    assert problems([err]) == ["naive / after_record / exit trial 3: worker did not reach it"]


def test_cli_runs_a_subset_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "crash.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "wayline.cli.main", "crashtest",
            "--trials", "1", "--points", "after_record", "--modes", "sync",
            "--strategies", "naive,wayline", "--jobs", "2", "--json", str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "naive" in done.stdout and "wayline" in done.stdout
    report = json.loads(out.read_text())
    assert report["ok"] is True
    cells = {(c["strategy"], c["point"], c["mode"]): c["charges"] for c in report["cells"]}
    assert cells == {
        ("naive", "after_record", "sync"): [2],
        ("wayline", "after_record", "sync"): [1],
    }


def test_cli_rejects_an_unknown_kill_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wayline.cli.main", "crashtest", "--points", "nowhere"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown kill point nowhere" in done.stdout


@pytest.mark.parametrize("point", ["provider_committed", "after_raise"])
def test_an_unknown_outcome_is_never_resent_across_a_kill(tmp_path: Path, point: str) -> None:
    """An effect with neither ``idempotent`` nor ``reconcile``: a worker SIGKILLed while its
    function is blocked in the provider call (``provider_committed``), and one SIGKILLed
    right after the function raised (the provider committed and dropped the response;
    ``after_raise``). A fresh process resumes each: both park, neither resends."""
    r = run_trial(tmp_path, "strict", point, "sync")
    assert r.error is None, r.error
    assert (r.charges, r.requests, r.status) == (1, 1, "parked")
    [effect] = r.effects
    assert effect["status"] == "UNKNOWN" and effect["attempt"] == 1
