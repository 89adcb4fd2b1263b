"""CI guard for LangGraph's own tests on wayline (../shared/langgraph-suite): run the files
listed in .ci/langgraph_suite.txt and fail if any of their tests does not pass, or if a
file passes fewer tests than pinned there (a test that stopped being collected counts).

    python .ci/langgraph_suite.py            # runs the harness, then checks
    python .ci/langgraph_suite.py --check    # checks the results already in .langgraph-suite

LANGGRAPH_SUITE names the harness directory when it is not ../shared/langgraph-suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / ".ci" / "langgraph_suite.txt"
SUITE = Path(os.environ.get("LANGGRAPH_SUITE", ROOT.parent / "shared" / "langgraph-suite"))
HARNESS = SUITE / "run.sh"  # LANGGRAPH_SUITE=<dir> where ../shared is elsewhere
OUT = ROOT / ".langgraph-suite" / "out"


def pins() -> dict[tuple[str, str], int]:
    """(suite, file) -> tests that must pass; suite is lgt (libs/langgraph) or pbt."""
    found = {}
    for line in PINS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            suite, name, count = line.split()
            found[(suite, name)] = int(count)
    return found


def run(pinned: dict[tuple[str, str], int]) -> None:
    if not HARNESS.exists():
        sys.exit(f"langgraph suite: {HARNESS} is missing (CI keeps ../shared beside the clone)")
    env = {
        **os.environ,
        "TARGETS": "wl",
        "FILES_LGT": " ".join(f for s, f in pinned if s == "lgt"),
        "FILES_PBT": " ".join(f for s, f in pinned if s == "pbt"),
    }
    subprocess.run(["bash", str(HARNESS)], cwd=ROOT, env=env, check=False)


def check(pinned: dict[tuple[str, str], int]) -> int:
    passed: dict[tuple[str, str], int] = {}
    failed: list[str] = []
    for suite in ("lgt", "pbt"):
        path = OUT / f"wl_{suite}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            key = (suite, Path(rec["file"]).name)
            if key not in pinned:
                continue
            if rec["outcome"] == "passed":
                passed[key] = passed.get(key, 0) + 1
            elif rec["outcome"] != "skipped":
                failed.append(f"{suite} {rec['nodeid']}: {rec['outcome']}")
    short = [
        f"{s} {f}: {passed.get((s, f), 0)} passed, {n} pinned"
        for (s, f), n in pinned.items()
        if passed.get((s, f), 0) < n
    ]
    for line in failed + short:
        print(f"langgraph suite regression: {line}")
    total = sum(passed.values())
    print(f"langgraph suite: {total} tests passed in {len(pinned)} pinned files")
    return 1 if failed or short else 0


if __name__ == "__main__":
    pinned = pins()
    if "--check" not in sys.argv:
        run(pinned)
    sys.exit(check(pinned))
