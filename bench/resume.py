"""Reconstruction time against run length: wayline's get_state beside LangGraph's.

    python bench/resume.py [--quick]

Fixtures (accumulating workload, bench/_common.py): wayline runs of n = 100, 1,000, 10,000
node steps for snapshot_every in {10, 100, 1000}; LangGraph ``SqliteSaver`` runs of n = 100
and 1,000, plain ``operator.add`` and ``DeltaChannel(snapshot_frequency=100)``. Every
fixture is written with durability sync on a connection with ``synchronous=OFF``: the rows
and their layout are those of a normal run, only the fsyncs are skipped to build them fast.

Measured: ``get_state`` in a fresh process (``python bench/_common.py probe``: a new
interpreter opens the store, compiles the graph, then the first ``get_state`` is timed
(cold) and a second one (warm)); one process per measurement, 9 measurements per point
(median, min and max). wayline at two points: the last snapshot step at or before n (the
best case; the snapshot policy, ``wayline.graph.snapshot_policy``, places snapshots by fold
cost, so it need not be n) and the step before it (the worst case: the most deltas to fold
since the snapshot before); folds and rows read from ``get_state(...).metadata``. LangGraph
at its latest checkpoint.

``--quick``: n = 100 and 1,000 only, 3 measurements, and each measurement in this process
with a fresh connection and a freshly compiled graph instead of a fresh process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import _common as c


def build_wayline(tmp: Path, n: int, every: int) -> str:
    import wayline

    path = tmp / f"wayline-{n}-{every}.db"
    store = wayline.connect(c.wayline_url(path, "OFF"))
    app = c.wayline_graph("accumulate", n).compile(store, snapshot_every=every)
    out = app.invoke(c.initial("accumulate"), c.config(), durability="sync")
    assert out["n"] == n
    store.close()
    return c.wayline_url(path)


def build_langgraph(tmp: Path, variant: str, n: int) -> Path:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp / f"langgraph-{variant}-{n}.db"
    conn = c.lg_connect(path, "OFF")
    app = c.langgraph_graph(variant, n).compile(checkpointer=SqliteSaver(conn))
    out = app.invoke(c.initial("accumulate"), c.config(), durability="sync")
    assert out["n"] == n
    conn.close()
    return path


def snapshot_step(url: str, n: int) -> int:
    """The last snapshot step at or before n: the best position to read (the worst is the
    step before it, furthest from the snapshot before); n when the run has no snapshot."""
    import wayline

    store = wayline.connect(url)
    try:
        snap = store.load_snapshot(c.TENANT, c.RUN_ID, n)
        return n if snap is None else snap.step
    finally:
        store.close()


def measure(spec: dict[str, Any], fresh_process: bool) -> dict[str, Any]:
    return c.probe(spec) if fresh_process else c._probe_main(spec)


def summarize(xs: list[float]) -> dict[str, float]:
    return {
        "median": c.median(xs),
        "min": min(xs),
        "max": max(xs),
        "p10": c.percentile(xs, 10),
        "p90": c.percentile(xs, 90),
    }


def main() -> None:
    args = c.quick_flag(description=__doc__)
    ns = [100, 1_000] if args.quick else [100, 1_000, 10_000]
    everies = [10, 100, 1_000]
    lg_ns = [100, 1_000]
    variants = ["plain"] + (["delta"] if c.has_delta_channel() else [])
    reps = 3 if args.quick else 9  # a fresh process's first read swings +-30% here
    fresh = not args.quick
    started = time.perf_counter()
    results: dict[str, Any] = {
        "env": c.environment(),
        "settings": {
            "quick": args.quick,
            "repetitions": reps,
            "fresh_process": fresh,
            "wayline_ns": ns,
            "snapshot_every": everies,
            "langgraph_ns": lg_ns,
            "langgraph_delta_snapshot_frequency": 100,
        },
        "wayline": [],
        "langgraph": [],
    }
    with c.temp_dir("resume") as tmp:
        print("building fixtures ...", flush=True)
        wl_fixtures = {(n, e): build_wayline(tmp, n, e) for n in ns for e in everies}
        lg_fixtures = {(v, n): build_langgraph(tmp, v, n) for v in variants for n in lg_ns}
        print(f"fixtures built ({time.perf_counter() - started:.0f} s); measuring ...", flush=True)
        for (n, every), url in wl_fixtures.items():
            entry: dict[str, Any] = {"n": n, "snapshot_every": every, "points": {}}
            snap = snapshot_step(url, n)
            for label, step in (("end", snap), ("worst", snap - 1)):
                runs = [
                    measure(
                        {
                            "fw": "wayline",
                            "url": url,
                            "workload": "accumulate",
                            "snapshot_every": every,
                            "points": [[label, step]],
                        },
                        fresh,
                    )[label]
                    for _ in range(reps)
                ]
                first = runs[0]
                assert all(r["folds"] == first["folds"] for r in runs)
                expected_items = step
                assert first["items"] == expected_items, (first, expected_items)
                entry["points"][label] = {
                    "step": first["step"],
                    "snapshot_step": first["snapshot_step"],
                    "folds": first["folds"],
                    "rows_read": first["rows_read"],
                    "cold_ms": summarize([r["cold_ms"] for r in runs]),
                    "warm_ms": summarize([r["warm_ms"] for r in runs]),
                    "runs": runs,
                }
            results["wayline"].append(entry)
            print(f"  wayline n={n} snapshot_every={every} done", flush=True)
        for (variant, n), path in lg_fixtures.items():
            runs = [
                measure({"fw": "langgraph", "path": str(path), "variant": variant}, fresh)["end"]
                for _ in range(reps)
            ]
            assert runs[0]["items"] == n
            results["langgraph"].append(
                {
                    "variant": variant,
                    "n": n,
                    "step": runs[0]["step"],
                    "cold_ms": summarize([r["cold_ms"] for r in runs]),
                    "warm_ms": summarize([r["warm_ms"] for r in runs]),
                    "runs": runs,
                }
            )
            print(f"  LangGraph {variant} n={n} done", flush=True)
    results["elapsed_seconds"] = time.perf_counter() - started
    report(results)
    path = c.write_json("resume", results)
    print(f"\nJSON: {path}  ({results['elapsed_seconds']:.0f} s)")


def _ms(s: dict[str, float]) -> tuple[str, str]:
    return f"{s['median']:.2f}", f"{s['min']:.2f}-{s['max']:.2f}"


def report(results: dict[str, Any]) -> None:
    s = results["settings"]
    how = (
        "fresh process per measurement"
        if s["fresh_process"]
        else ("fresh connection + compiled graph per measurement, same process")
    )
    rows = []
    for e in results["wayline"]:
        end, worst = e["points"]["end"], e["points"]["worst"]
        rows.append(
            [
                c.fmt_num(e["n"]),
                c.fmt_num(e["snapshot_every"]),
                c.fmt_num(end["step"]),
                end["folds"],
                end["rows_read"],
                *_ms(end["cold_ms"]),
                c.fmt_num(worst["step"]),
                worst["folds"],
                worst["rows_read"],
                *_ms(worst["cold_ms"]),
                f"{worst['warm_ms']['median']:.2f}",
                c.fmt_ratio(worst["cold_ms"]["median"] / end["cold_ms"]["median"]),
            ]
        )
    c.print_table(
        f"wayline get_state, accumulating list ({how}; {s['repetitions']} runs; ms)",
        [
            "n",
            "snapshot_every",
            "snapshot step",
            "folds",
            "rows",
            "ms",
            "min-max",
            "worst step",
            "folds",
            "rows",
            "ms",
            "min-max",
            "warm ms",
            "worst/snapshot (goal <= 1.3x)",
        ],
        rows,
    )
    by_n = {}
    for e in results["wayline"]:
        if e["snapshot_every"] == 100:
            by_n[e["n"]] = e["points"]
    rows = []
    for e in results["langgraph"]:
        mine = by_n.get(e["n"])
        med = e["cold_ms"]["median"]
        rows.append(
            [
                e["variant"],
                c.fmt_num(e["n"]),
                *_ms(e["cold_ms"]),
                f"{e['warm_ms']['median']:.2f}",
                f"{mine['end']['cold_ms']['median']:.2f}" if mine else "-",
                c.fmt_ratio(med / mine["end"]["cold_ms"]["median"]) if mine else "-",
                f"{mine['worst']['cold_ms']['median']:.2f}" if mine else "-",
                c.fmt_ratio(med / mine["worst"]["cold_ms"]["median"]) if mine else "-",
            ]
        )
    c.print_table(
        f"LangGraph SqliteSaver get_state at its latest checkpoint ({how}; ms), against "
        "wayline with snapshot_every 100",
        [
            "variant",
            "n",
            "ms",
            "min-max",
            "warm ms",
            "wayline @n",
            "LG/wayline",
            "wayline @n-1",
            "LG/wayline",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
