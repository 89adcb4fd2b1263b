"""The data-class commands as a user runs them: bytes by class, the store report, a
retention policy (dry run, then applied), export and erasure by subject."""

from __future__ import annotations

import json
import operator
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, TypedDict

import wayline
from wayline import END, START, Classified, Redacted, StateGraph

CLI = [sys.executable, "-m", "wayline.cli.main"]
PII = "PII-5150-erin"


class State(TypedDict):
    msgs: Annotated[list[str], operator.add, Classified("pii")]
    notes: Annotated[list[str], operator.add]
    n: int


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("WAYLINE_SCOPE", None)
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def test_bytes_report_policy_export_and_erasure_from_the_cli(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'data.db'}"
    store = wayline.connect(url)
    g = StateGraph(State)
    g.add_node("step", lambda s: {"msgs": [PII], "notes": ["kept"], "n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    app = g.compile(store)
    for run_id, subject in (("e1", "erin"), ("e2", "erin"), ("f1", "frank")):
        cfg = {"configurable": {"thread_id": run_id, "subject": subject}}
        app.invoke({"msgs": [], "notes": [], "n": 0}, cfg)

    shown = run_cli("runs", "bytes", "e1", "--db", url)
    assert shown.returncode == 0 and "by data class" in shown.stdout
    assert "pii" in shown.stdout and "default" in shown.stdout
    report = run_cli("store", "report", "--policy", "pii=0d:redact", "--db", url)
    assert report.returncode == 0 and "redact from" in report.stdout, report.stdout

    exported = run_cli("export", "--subject", "erin", "--db", url)
    data = json.loads(exported.stdout)
    assert [r["run_id"] for r in data["runs"]] == ["e1", "e2"] and PII in exported.stdout

    refused = run_cli("purge", "--subject", "erin", "--class", "pii", "--db", url)
    assert refused.returncode == 2 and "--yes" in refused.stdout
    erased = run_cli("purge", "--subject", "erin", "--class", "pii", "--yes", "--db", url)
    receipt = json.loads(erased.stdout)
    assert receipt["runs"] == ["e1", "e2"] and receipt["rows"]["deltas"] >= 4
    assert PII not in run_cli("export", "--subject", "erin", "--db", url).stdout

    dry = run_cli("retention", "apply", "--policy", "pii=0d:redact", "--dry-run", "--db", url)
    assert dry.returncode == 0 and "default/f1: redact pii" in dry.stdout
    assert "e1" not in dry.stdout  # erin's pii is redacted already
    applied = run_cli("retention", "apply", "--policy", "pii=0d:redact", "--db", url)
    assert applied.returncode == 0 and "acted on 1 run(s)" in applied.stdout
    values = app.get_state({"configurable": {"thread_id": "f1"}}).values
    assert isinstance(values["msgs"], Redacted) and values["notes"] == ["kept"]
    store.close()
