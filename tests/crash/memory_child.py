"""A child process for the memory crash tests: a graph whose node writes long-term memory,
then (``--block``) reports it and waits, to be killed there or to go on as a zombie after
another process took the run over (``--go-file``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, TypedDict

import wayline
from wayline.errors import LeaseLost
from wayline.graph import END, START, StateGraph
from wayline.memory import DurableStore

DEADLINE_S = 60.0


class State(TypedDict):
    user: str
    done: str


def build(url: str, label: str, marker: str | None, go_file: str | None) -> Any:
    store = wayline.connect(url)

    def remember(s: State, store: Any) -> dict[str, Any]:
        store.put(("prefs", s["user"]), "drink", {"drink": "tea", "by": label})
        if marker:
            with open(marker, "w") as f:
                f.write("wrote")
            if go_file is None:
                while True:  # killed here, between the write and its step's commit
                    time.sleep(3600)
            deadline = time.monotonic() + DEADLINE_S
            while not os.path.exists(go_file) and time.monotonic() < deadline:
                time.sleep(0.005)
        return {"done": label}

    b = StateGraph(State)
    b.add_node("remember", remember)
    b.add_edge(START, "remember")
    b.add_edge("remember", END)
    return b.compile(checkpointer=store, store=DurableStore(store))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["run", "resume", "read"])
    p.add_argument("--db", required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--marker")
    p.add_argument("--go-file")
    args = p.parse_args()
    url = f"sqlite:///{args.db}"
    if args.role == "read":
        row = DurableStore(url).record(("prefs", "u1"), "drink")
        print(json.dumps(None if row is None else {"value": row.value, "run_id": row.run_id}))
        return 0
    app = build(url, args.label, args.marker, args.go_file)
    cfg = {"configurable": {"thread_id": "memory-run"}}
    try:
        app.invoke({"user": "u1", "done": ""} if args.role == "run" else None, cfg)
    except LeaseLost:
        print("lease lost")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
