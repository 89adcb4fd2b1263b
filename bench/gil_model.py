"""What CPython's GIL costs threads spread over cores, with no wayline code in the loop.

    python bench/gil_model.py [--quick] [--threads 1,4,8] [--rounds 3]

A model of a worker's slots: T threads in one process, each looping over a little Python
work (a dict filled with 300 strings, about 30-50 us) and one ``fdatasync`` of a small file
of its own (a system call that releases the GIL, as SQLite's commit does). Each cell runs
in a fresh process, either confined to one CPU (``sched_setaffinity``, as ``wayline
worker`` places each process by default) or left to the OS on every CPU it may use (as
``--cpus all`` does); cells alternate, the order rotated each round, and a cell's figure is
its median round. Printed: loops/s, CPU a loop (user and system, ``getrusage``), context
switches a loop, and for each thread count the ratio of the two placements' CPU a loop.

Issue 31 asks for a SQLite worker that reaches its goal without relying on pinning. On the
2-vCPU dev machine a wayline worker costs about 1.5x the CPU a step when its threads are
left to the OS (bench/fleet.py); this model shows the same premium, larger, in plain
CPython: what the OS's placement costs is the GIL's hand-offs between cores, not
wayline's code. Linux only. Writes bench/results/gil_model.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import _common as c

PLACEMENTS = ("one CPU", "left to the OS")


def cell(placement: str, threads: int, loops: int) -> dict[str, float]:
    """One cell, in this process (``python bench/gil_model.py --cell``)."""
    if placement == PLACEMENTS[0]:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    folder = tempfile.mkdtemp(prefix="gil-model-")

    def slot(i: int) -> None:
        fd = os.open(f"{folder}/f{i}", os.O_RDWR | os.O_CREAT)
        try:
            work: dict[int, str] = {}
            for _ in range(loops):
                for j in range(300):
                    work[j] = str(j) + "a"
                os.pwrite(fd, b"x" * 100, 0)
                os.fdatasync(fd)
        finally:
            os.close(fd)

    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    pool = [threading.Thread(target=slot, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    n = threads * loops
    switches = after.ru_nvcsw - before.ru_nvcsw + after.ru_nivcsw - before.ru_nivcsw
    return {
        "loops_s": n / wall,
        "user_us": 1e6 * (after.ru_utime - before.ru_utime) / n,
        "sys_us": 1e6 * (after.ru_stime - before.ru_stime) / n,
        "switches": switches / n,
    }


def measure(placement: str, threads: int, loops: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--cell", placement, str(threads), str(loops)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--cell":
        print(json.dumps(cell(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer loops, one round")
    ap.add_argument("--threads", default="1,4,8", help="thread counts, comma-separated")
    ap.add_argument("--rounds", type=int, default=None, help="default 3 (--quick: 1)")
    args = ap.parse_args()
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        sys.exit("the model needs Linux and two or more CPUs this process may use")
    rounds = args.rounds or (1 if args.quick else 3)
    loops = 300 if args.quick else 1500
    cells = [(p, int(t)) for t in args.threads.split(",") for p in PLACEMENTS]
    samples: dict[tuple[str, int], list[dict[str, float]]] = {k: [] for k in cells}
    for r in range(rounds):
        order = cells[r % len(cells) :] + cells[: r % len(cells)]
        for placement, threads in order:
            got = measure(placement, threads, loops)
            samples[(placement, threads)].append(got)
            print(f"round {r + 1}, {threads} thread(s), {placement}: {got['loops_s']:,.0f} loops/s")
    med = {k: {f: statistics.median(s[f] for s in v) for f in v[0]} for k, v in samples.items()}
    rows = []
    for placement, threads in cells:
        m = med[(placement, threads)]
        cpu = m["user_us"] + m["sys_us"]
        one = med[(PLACEMENTS[0], threads)]
        ratio = cpu / (one["user_us"] + one["sys_us"])
        rows.append(
            [
                f"{threads} thread(s), {placement}",
                c.fmt_num(m["loops_s"]),
                f"{m['user_us']:.0f} + {m['sys_us']:.0f}",
                f"{m['switches']:.1f}",
                "-" if placement == PLACEMENTS[0] else f"{ratio:.2f}x",
            ]
        )
    c.print_table(
        f"CPython threads: Python work and an fdatasync a loop ({loops} loops a thread, "
        f"{rounds} round(s), medians; {len(os.sched_getaffinity(0))} CPUs)",
        ["cell", "loops/s", "CPU us a loop (user + sys)", "switches a loop", "CPU x one CPU"],
        rows,
    )
    c.write_json(
        "gil_model",
        {
            "environment": c.environment(),
            "loops": loops,
            "rounds": rounds,
            "cells": [{"placement": p, "threads": t, **med[(p, t)]} for p, t in cells],
        },
    )


if __name__ == "__main__":
    main()
