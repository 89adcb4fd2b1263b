"""The demo's worker process: runs (or resumes) the support agent and can stop dead at a
chosen draft round so the demo can SIGKILL it there. Not a public interface."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading

import wayline
from wayline.demo.support_agent import SupportState, build_graph, demo_input


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wayline.demo.scenes_worker")
    p.add_argument("url")
    p.add_argument("run_id")
    p.add_argument("log", help="file that gets one line per node execution (fsynced)")
    p.add_argument("--block-at-round", type=int, default=0)
    p.add_argument("--marker", default="")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--durability", default="sync")
    args = p.parse_args(argv)

    def hook(node: str, state: SupportState) -> None:
        upcoming = state.get("round", 0) + 1 if node == "draft" else state.get("round", 0)
        with open(args.log, "a") as f:
            f.write(f"{node} {upcoming} {os.getpid()}\n")
            f.flush()
            os.fsync(f.fileno())
        if node == "draft" and upcoming == args.block_at_round and args.marker:
            with open(args.marker, "w") as f:
                f.write(str(os.getpid()))
                f.flush()
                os.fsync(f.fileno())
            threading.Event().wait()  # stand still until the demo kills this process

    app = build_graph(wayline.connect(args.url), hook)
    cfg = {"configurable": {"thread_id": args.run_id}}
    final = app.invoke(None if args.resume else demo_input(), cfg, durability=args.durability)
    json.dump({"digest": app.state_digest(cfg), "rounds": final["round"]}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
