"""A LangGraph graph checkpointed by WaylineSaver, SIGKILLed by the payments service right
after it committed a charge (before the response reached the node), resumed by a fresh
process. Through ``wayline.langgraph.effect``: one charge (the resume resends under the
same key and the provider deduplicates). A plain HTTP call: two charges."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wayline.demo.payments import PaymentsService

pytest.importorskip("langgraph.graph", reason="needs the wayline[langgraph] extra")
pytestmark = pytest.mark.crash

CHILD = Path(__file__).resolve().parent / "lg_payment_child.py"
TIMEOUT_S = 60.0


def _child(tmp: Path, service: str, strategy: str, *extra: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(CHILD), "--db", str(tmp / "lg.db"), "--service", service,
            "--strategy", strategy, *extra]  # fmt: skip
    err = open(tmp / f"{'resume' if '--resume' in extra else 'run'}.stderr", "wb")  # noqa: SIM115
    return subprocess.Popen(argv, stderr=err, env=dict(os.environ))


def crash_and_resume(tmp: Path, strategy: str) -> tuple[dict[str, int], dict[str, Any]]:
    with PaymentsService(tmp / "ledger.db") as svc:
        run = _child(tmp, svc.url, strategy, "--marker", str(tmp / "marker.jsonl"))
        try:
            rc = run.wait(timeout=TIMEOUT_S)
        finally:
            if run.poll() is None:
                os.kill(run.pid, signal.SIGKILL)
                run.wait()
        assert rc == -signal.SIGKILL, (rc, (tmp / "run.stderr").read_text())
        assert svc.ledger.stats()["charges"] == 1  # committed by the provider, then killed
        out = tmp / "resume.json"
        resume = _child(tmp, svc.url, strategy, "--resume", "--out", str(out))
        assert resume.wait(timeout=TIMEOUT_S) == 0, (tmp / "resume.stderr").read_text()
        return svc.ledger.stats(), json.loads(out.read_text())


def test_effect_in_a_langgraph_node_charges_once(tmp_path: Path) -> None:
    stats, report = crash_and_resume(tmp_path, "effect")
    assert (stats["charges"], stats["requests"], stats["deduplicated"]) == (1, 2, 1)
    assert report["result"]["receipt"].startswith("order-7 paid by ch_")
    assert report["result"]["payment"]["deduplicated"] is True
    [e] = report["effects"]
    assert (e["status"], e["attempt"]) == ("SUCCEEDED", 2)  # resent under the same key


def test_a_plain_http_call_in_the_node_charges_twice(tmp_path: Path) -> None:
    stats, report = crash_and_resume(tmp_path, "plain")
    assert (stats["charges"], stats["requests"], stats["deduplicated"]) == (2, 2, 0)
    assert report["effects"] == []
