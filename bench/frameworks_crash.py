"""The reference crash test across frameworks: prepare -> charge -> finalize in LangGraph,
LlamaIndex Workflows, CrewAI Flows and wayline, each plain (its own documented persistence,
no key) and on wayline, SIGKILLed before the charge, after the charge (before the framework
recorded the step) and after the record, ``--trials`` each; a fresh process resumes and the
local payments service counts the charges. Prints the table of charges per trial and writes
``bench/results/frameworks_crash.json``.

    python bench/frameworks_crash.py [--trials 5] [--frameworks langgraph,llamaindex,...]

The same as ``wayline crashtest --framework langgraph,llamaindex,crewai,wayline``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console

from wayline.demo.frameworks_crash import FRAMEWORKS, FrameworkTrial, run_framework_matrix
from wayline.demo.frameworks_report import render


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    args = p.parse_args()
    console = Console()
    started = time.monotonic()

    def progress(r: FrameworkTrial) -> None:
        console.print(f"{r.framework:10} {r.arm:8} {r.point:14} trial {r.trial}: {r.token}")

    fws = [f for f in args.frameworks.split(",") if f]
    results = run_framework_matrix(fws, trials=args.trials, progress=progress)
    ok = render(console, results)
    console.print(f"{len(results)} trials in {time.monotonic() - started:.0f} s")
    out = Path(__file__).parent / "results" / "frameworks_crash.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
