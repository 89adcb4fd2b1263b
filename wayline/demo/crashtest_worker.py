"""The crash test's worker process: runs (or resumes) the payment flow, optionally stopping
dead at a kill point. Not a public interface; ``wayline.demo.crashtest`` drives it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import wayline
from wayline.demo.payment_flow import (
    ALL_KILL_POINTS,
    ALL_STRATEGIES,
    KillSwitch,
    build_flow,
    order_input,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wayline.demo.crashtest_worker")
    p.add_argument("--db", required=True, help="SQLite file of the run store")
    p.add_argument("--service", required=True, help="payments service URL")
    p.add_argument("--strategy", required=True, choices=ALL_STRATEGIES)
    p.add_argument("--mode", required=True, choices=["sync", "async", "exit"])
    p.add_argument("--thread", required=True)
    p.add_argument("--order", default="order-1042")
    p.add_argument("--kill-point", choices=ALL_KILL_POINTS)
    p.add_argument("--marker", help="file the kill switch writes when it is reached")
    p.add_argument("--resume", action="store_true", help="invoke(None, cfg): continue the run")
    p.add_argument("--out", help="write a JSON report of the run here")
    args = p.parse_args(argv)

    hook = None
    if args.kill_point:
        if not args.marker:
            p.error("--kill-point needs --marker")
        hook = KillSwitch(args.kill_point, args.marker, args.service)
    store = wayline.connect(f"sqlite:///{args.db}")
    app = build_flow(store, args.service, args.strategy, hook)
    cfg = {"configurable": {"thread_id": args.thread}}
    report: dict[str, Any] = {"pid": os.getpid(), "result": None, "error": None}
    try:
        inp = None if args.resume else order_input(args.order)
        report["result"] = app.invoke(inp, cfg, durability=args.mode)
    except Exception as exc:  # reported, not raised: the parent reads the report
        report["error"] = f"{type(exc).__name__}: {exc}"
    run = store.get_run("default", args.thread)
    report["status"] = run.status if run is not None else None
    report["effects"] = [
        {"key": e.key, "status": e.status, "attempt": e.attempt, "run_id": e.run_id}
        for e in store.list_effects("default", args.thread)
    ]
    store.close()
    if args.out:
        with open(f"{args.out}.tmp", "w", encoding="utf-8") as f:
            json.dump(report, f, default=str)
        os.replace(f"{args.out}.tmp", args.out)
    if report["error"] is not None:
        print(report["error"], file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
