"""Steps per second per durability mode: wayline against LangGraph's SqliteSaver, same run.

    python bench/throughput.py [--quick]

Workload: one run of n = 1,000 node steps (200 with --quick) of a trivial node on the
accumulating workload (``log`` gains a ~500-byte item per step; see bench/_common.py), on a
fresh SQLite file per run, WAL mode, ``synchronous=FULL`` for every arm (wayline's default;
SQLite's compiled default, which SqliteSaver keeps). Timed: ``invoke`` only (the store is
open and the graph compiled before the clock starts; ``invoke`` returns once the run is as
durable as its mode promises, so async and exit include their final flush).

Arms:
- raw commits: a loop of n one-row commits (500-byte row), WAL, synchronous FULL: the
  physical limit of anything that makes each step durable before the next.
- wayline sync / async / exit on a SQLite file.
- wayline on ``sqlite:///:memory:`` with durability exit (one commit at the end, no fsync:
  the engine's own cost per step) and with durability sync (the per-step commit path's CPU
  cost without any fsync).
- LangGraph ``SqliteSaver`` sync / async / exit with a plain ``operator.add`` list and with
  ``DeltaChannel(snapshot_frequency=100)``; the DeltaChannel sync arm again on a
  ``:memory:`` SQLite connection (its per-step CPU without fsync; LangGraph sync commits
  twice a step, put_writes then put, wayline once); LangGraph without a checkpointer (invoked
  without ``durability``: LangGraph 1.2.24 raises AttributeError when it is passed with no
  checkpointer).

Each repetition runs every arm once, in an order rotated by one per repetition, so that the
disk's fluctuations (one-row FULL commits vary 400-3,300/s on the dev machines) fall on every
arm alike; reported figures are medians over repetitions: 5 (3 with --quick). Goal ratios
are given as the ratio of the medians and as the median of the per-repetition ratios (arms
of one repetition ran within a minute of each other).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c

Arm = Callable[[Path, int], float]  # (fresh db path, steps) -> seconds


def wayline_arm(durability: str, memory: bool = False) -> Arm:
    def run(path: Path, n: int) -> float:
        import wayline

        store = wayline.connect(c.wayline_url(":memory:" if memory else path, "FULL"))
        app = c.wayline_graph("accumulate", n).compile(store, snapshot_every=100)
        t = time.perf_counter()
        out = app.invoke(c.initial("accumulate"), c.config(), durability=durability)
        seconds = time.perf_counter() - t
        assert out["n"] == n and len(out["log"]) == n
        store.close()
        return seconds

    return run


def langgraph_arm(variant: str, durability: str | None, memory: bool = False) -> Arm:
    def run(path: Path, n: int) -> float:
        g = c.langgraph_graph(variant, n)
        conn = None
        if durability is None:
            app = g.compile()
            kwargs: dict[str, Any] = {}
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = c.lg_connect(":memory:" if memory else path)
            saver = SqliteSaver(conn)
            saver.setup()
            assert memory or c.lg_synchronous(conn) == "FULL"
            app = g.compile(checkpointer=saver)
            kwargs = {"durability": durability}
        t = time.perf_counter()
        out = app.invoke(c.initial("accumulate"), c.config(), **kwargs)
        seconds = time.perf_counter() - t
        assert out["n"] == n and len(out["log"]) == n
        if conn is not None:
            conn.close()
        return seconds

    return run


def raw_arm(path: Path, n: int) -> float:
    return n / c.raw_commit_rate(path, n, "FULL")


def arms(quick: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "name": "raw one-row commits (FULL)",
            "fw": "sqlite",
            "mode": "physical limit",
            "fn": raw_arm,
        },
        {"name": "wayline sync", "fw": "wayline", "mode": "sync", "fn": wayline_arm("sync")},
        {"name": "wayline async", "fw": "wayline", "mode": "async", "fn": wayline_arm("async")},
        {"name": "wayline exit", "fw": "wayline", "mode": "exit", "fn": wayline_arm("exit")},
        {
            "name": "wayline :memory: exit",
            "fw": "wayline",
            "mode": "engine (no fsync)",
            "fn": wayline_arm("exit", memory=True),
        },
        {
            "name": "wayline :memory: sync",
            "fw": "wayline",
            "mode": "commit path, no fsync",
            "fn": wayline_arm("sync", memory=True),
        },
    ]
    for variant in ["plain"] + (["delta"] if c.has_delta_channel() else []):
        for mode in ("sync", "async", "exit"):
            out.append(
                {
                    "name": f"LangGraph {variant} {mode}",
                    "fw": f"langgraph-{variant}",
                    "mode": mode,
                    "fn": langgraph_arm(variant, mode),
                }
            )
    if c.has_delta_channel():
        out.append(
            {
                "name": "LangGraph delta :memory: sync",
                "fw": "langgraph-delta",
                "mode": "commit path, no fsync",
                "fn": langgraph_arm("delta", "sync", memory=True),
            }
        )
    out.append(
        {
            "name": "LangGraph no checkpointer",
            "fw": "langgraph-plain",
            "mode": "engine (no saver)",
            "fn": langgraph_arm("plain", None),
        }
    )
    return out


def main() -> None:
    args = c.quick_flag(description=__doc__)
    n = 200 if args.quick else 1_000
    reps = 3 if args.quick else 5
    plan = arms(args.quick)
    started = time.perf_counter()
    samples: dict[str, list[float]] = {a["name"]: [] for a in plan}
    order_log = []
    c.prepare_items(n + 1)  # nodes look their item up: trivial, the same for every arm
    with c.temp_dir("throughput") as tmp:
        # Warm-up: import both frameworks and run each code path once, untimed.
        for a in plan:
            if a["fw"] != "sqlite":
                a["fn"](tmp / "warmup.db", 5)
                _remove(tmp / "warmup.db")
        for rep in range(reps):
            order = plan[rep % len(plan) :] + plan[: rep % len(plan)]
            order_log.append([a["name"] for a in order])
            for a in order:
                path = tmp / f"run-{rep}.db"
                gc.collect()
                seconds = a["fn"](path, n)
                _remove(path)
                samples[a["name"]].append(n / seconds)
            print(
                f"repetition {rep + 1}/{reps} done ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    results: dict[str, Any] = {
        "env": c.environment(),
        "settings": {
            "quick": args.quick,
            "steps": n,
            "repetitions": reps,
            "synchronous": "FULL",
            "snapshot_every": 100,
            "order": order_log,
        },
        "arms": [],
    }
    for a in plan:
        xs = samples[a["name"]]
        results["arms"].append(
            {
                "name": a["name"],
                "framework": a["fw"],
                "mode": a["mode"],
                "steps_per_second": xs,
                "median": c.median(xs),
                "min": min(xs),
                "max": max(xs),
            }
        )
    results["elapsed_seconds"] = time.perf_counter() - started
    report(results)
    path = c.write_json("throughput", results)
    print(f"\nJSON: {path}  ({results['elapsed_seconds']:.0f} s)")


def _remove(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


def report(results: dict[str, Any]) -> None:
    arms = {a["name"]: a for a in results["arms"]}
    raw = arms["raw one-row commits (FULL)"]["median"]
    rows = []
    for a in results["arms"]:
        med = a["median"]
        durable_each_step = a["mode"] in ("sync",) and ":memory:" not in a["name"]
        rows.append(
            [
                a["name"],
                c.fmt_num(med),
                f"{c.fmt_num(a['min'])}-{c.fmt_num(a['max'])}",
                len(a["steps_per_second"]),
                f"{1000 / med:.3f}",
                f"{med / raw:.2f}" if durable_each_step else "",
            ]
        )
    s = results["settings"]
    c.print_table(
        f"Steps per second, {s['steps']:,}-step run, accumulating list, SQLite WAL "
        f"synchronous={s['synchronous']}, median of {s['repetitions']} (interleaved)",
        ["arm", "median steps/s", "min-max", "runs", "ms/step", "of raw commit rate"],
        rows,
    )

    goals = []
    lg_variants = [v for v in ("plain", "delta") if f"LangGraph {v} sync" in arms]

    def compare(
        goal: str, mine_name: str, theirs_name: str, against: str, limit: float | None
    ) -> None:
        mine, theirs = arms[mine_name], arms[theirs_name]
        ratio = mine["median"] / theirs["median"]
        paired = c.median(
            [
                a / b
                for a, b in zip(mine["steps_per_second"], theirs["steps_per_second"], strict=True)
            ]
        )
        goals.append(
            {
                "goal": goal,
                "against": against,
                "wayline": mine["median"],
                "langgraph": theirs["median"],
                "ratio": ratio,
                "paired_ratio": paired,
                "limit": limit,
                "ok": None if limit is None else ratio >= limit,
            }
        )

    for mode in ("sync", "async", "exit"):
        for v in lg_variants:
            is_goal = mode in ("sync", "exit")
            compare(
                f"wayline {mode} >= 3x LangGraph {mode}"
                if is_goal
                else f"wayline {mode} vs LangGraph {mode} (no goal)",
                f"wayline {mode}",
                f"LangGraph {v} {mode}",
                f"LangGraph {v}",
                3.0 if is_goal else None,
            )
    if "LangGraph delta :memory: sync" in arms:
        compare(
            "CPU of the sync path: wayline :memory: sync vs LangGraph delta :memory: sync",
            "wayline :memory: sync",
            "LangGraph delta :memory: sync",
            "LangGraph delta",
            None,
        )
    compare(
        "engine cost: wayline :memory: exit vs LangGraph without a checkpointer",
        "wayline :memory: exit",
        "LangGraph no checkpointer",
        "LangGraph none",
        None,
    )
    results["goals"] = goals
    c.print_table(
        "Goals (ratios of medians measured in this run)",
        [
            "goal",
            "against",
            "wayline steps/s",
            "LangGraph steps/s",
            "ratio",
            "per-rep ratio (median)",
            "result",
        ],
        [
            [
                g["goal"],
                g["against"],
                c.fmt_num(g["wayline"]),
                c.fmt_num(g["langgraph"]),
                f"{g['ratio']:.2f}x",
                f"{g['paired_ratio']:.2f}x",
                "" if g["ok"] is None else c.verdict(g["ok"]),
            ]
            for g in goals
        ],
    )
    print(
        f"raw one-row FULL commits: median {c.fmt_num(raw)}/s "
        f"(min {c.fmt_num(arms['raw one-row commits (FULL)']['min'])}, "
        f"max {c.fmt_num(arms['raw one-row commits (FULL)']['max'])}) in this run"
    )


if __name__ == "__main__":
    main()
