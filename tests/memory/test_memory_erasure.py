"""Erasure by data subject reaches long-term memory: after ``wayline purge --subject S
--yes`` no row and no byte of S's items remains in the SQLite files (database and WAL);
another subject's items are unchanged. A node's items are about its run's subject."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import wayline
from wayline.graph import END, START, StateGraph
from wayline.memory import DurableStore

CLI = [sys.executable, "-m", "wayline.cli.main"]
SECRET = "ALICE-SECRET-7f3a9c"
OTHER = "BOB-KEEPS-THIS-51e2"


class State(TypedDict):
    said: str


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=env)


def test_purge_by_subject_leaves_no_byte_of_its_items(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    url = f"sqlite:///{path}"
    store = wayline.connect(url)

    def remember(s: State, store: Any) -> dict[str, Any]:
        store.put(("chat", "prefs"), "said", {"said": s["said"]})  # about the run's subject
        return {}

    b = StateGraph(State)
    b.add_node("remember", remember)
    b.add_edge(START, "remember")
    b.add_edge("remember", END)
    app = b.compile(store, store=DurableStore(store))
    config = {"configurable": {"thread_id": "a1", "subject": "alice"}}
    app.invoke({"said": f"node wrote {SECRET}"}, config)
    memory = DurableStore(store)
    memory.put(("profile", "alice"), "email", {"email": f"{SECRET}@x"}, subject="alice", cls="pii")
    memory.put(("profile", "alice"), "email", {"email": f"v2-{SECRET}@x"}, subject="alice")
    memory.put(("profile", "bob"), "email", {"email": OTHER}, subject="bob", cls="pii")
    row = memory.record(("chat", "prefs"), "said")
    assert row is not None and row.subject == "alice" and row.run_id == "a1"
    exported = run_cli("export", "--subject", "alice", "--db", url)
    assert exported.returncode == 0, exported.stderr
    assert len(json.loads(exported.stdout)["memory"]) == 3 and SECRET in exported.stdout
    store.close()

    erased = run_cli("purge", "--subject", "alice", "--yes", "--db", url)
    assert erased.returncode == 0, erased.stdout + erased.stderr
    assert json.loads(erased.stdout)["rows"]["memory"] == 3

    for file in tmp_path.iterdir():
        if file.name.startswith("memory.db"):
            held = file.read_bytes()
            assert SECRET.encode() not in held, file.name
    after = DurableStore(url)
    assert after.get(("profile", "alice"), "email") is None
    assert after.get(("chat", "prefs"), "said") is None
    bob = after.get(("profile", "bob"), "email")
    assert bob is not None and bob.value == {"email": OTHER}
