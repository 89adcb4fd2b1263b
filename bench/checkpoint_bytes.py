"""Bytes a run writes: wayline per table against LangGraph's SQLite saver, same workload.

    python bench/checkpoint_bytes.py [--quick]

wayline: n = 100, 1,000, 10,000 node steps of the accumulating workload (``log`` gains a
~500-byte item per step) and of the replace-only control (``last`` replaced by a ~500-byte
value per step); snapshot_every 100. Bytes come from the instrument
(``wayline.instrument.byte_report``: the meter rows the store wrote in the same
transactions as the data). Folds and rows read at resume are measured in a fresh process
(``bench/_common.py probe``): at the run's last step, and at step n-1 (the worst position,
furthest from a snapshot), then ``verify`` compares the reconstruction with the digest the
final commit recorded.

The subgraph workload (``bench/subgraph_bytes.py``): the same accumulating steps run by a
compiled subgraph inside a parent graph, n = 100 and 1,000, both frameworks. The chat
workload (``bench/messages_bytes.py``): a ``MessagesState`` gaining a ~500-byte message per
step through ``add_messages``, same n.

LangGraph: ``SqliteSaver`` at n = 100 and 1,000, plain ``operator.add``, ``DeltaChannel``
(snapshot_frequency 100, as LangGraph's own figures use it) and the replace-only control. Bytes are
what the saver serialized in ``put`` + ``put_writes`` (a counting JsonPlusSerializer
subclass plus the metadata JSON ``put`` stores; see ``_common.counting_saver``), and the
SQLite file size after folding the WAL in.

Every run uses durability sync. Bytes do not depend on how often SQLite fsyncs, so to keep
the run short both frameworks' connections use ``synchronous=NORMAL`` here (throughput.py
measures FULL). ``--quick`` runs wayline with durability exit (the same rows, committed at
once) and LangGraph at n = 100 only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import _common as c
import messages_bytes
import subgraph_bytes


def wayline_arm(
    tmp: Path, workload: str, n: int, durability: str, synchronous: str
) -> dict[str, Any]:
    import wayline
    from wayline.instrument import byte_report

    path = tmp / f"wayline-{workload}-{n}.db"
    url = c.wayline_url(path, synchronous)
    store = wayline.connect(url)
    app = c.wayline_graph(workload, n).compile(store, snapshot_every=SNAPSHOT_EVERY)
    t = time.perf_counter()
    out = app.invoke(c.initial(workload), c.config(), durability=durability)
    seconds = time.perf_counter() - t
    assert out["n"] == n, out["n"]
    r = byte_report(store, c.TENANT, c.RUN_ID)
    head, tail = r.decile_bytes_per_step()
    res: dict[str, Any] = {
        "framework": "wayline",
        "workload": workload,
        "n": n,
        "durability": durability,
        "synchronous": synchronous,
        "run_seconds": seconds,
        "by_table": r.by_table(),
        "by_channel": {f"{t}:{ch}": b for (t, ch), b in r.by_channel().items()},
        "total": r.total,
        "payload": r.payload,
        "bytes_per_step": r.total / n,
        "write_amplification": r.write_amplification,
        "first_decile_bytes_per_step": head,
        "last_decile_bytes_per_step": tail,
        "first_to_last": r.first_to_last,
    }
    store.close()
    res["file_size"] = c.sqlite_file_size(path)
    # A fresh process: new connection, freshly compiled graph, nothing in memory.
    res["resume"] = c.probe(
        {
            "fw": "wayline",
            "url": url,
            "workload": workload,
            "snapshot_every": SNAPSHOT_EVERY,
            "points": [["end", None], ["worst", n - 1]],
            "verify": True,
        }
    )
    end = res["resume"]["end"]
    assert end["n"] == n and end["step"] == n, end
    if workload == "accumulate":
        assert end["items"] == n, end
    return res


def langgraph_arm(tmp: Path, variant: str, n: int, synchronous: str) -> dict[str, Any]:
    path = tmp / f"langgraph-{variant}-{n}.db"
    conn = c.lg_connect(path, synchronous)
    counter = c.ByteCounter()
    saver = c.counting_saver(conn, counter)
    app = c.langgraph_graph(variant, n).compile(checkpointer=saver)
    t = time.perf_counter()
    out = app.invoke(c.initial(c.lg_workload(variant)), c.config(), durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n, out["n"]
    if variant != "replace":
        assert len(out["log"]) == n
    level = c.lg_synchronous(conn)
    conn.close()
    return {
        "framework": "langgraph",
        "variant": variant,
        "n": n,
        "durability": "sync",
        "synchronous": level,
        "run_seconds": seconds,
        "serialized": dict(counter.counts),
        "calls": dict(counter.calls),
        "total": counter.total,
        "bytes_per_step": counter.total / n,
        "file_size": c.sqlite_file_size(path),
    }


SNAPSHOT_EVERY = 100


def main() -> None:
    args = c.quick_flag(description=__doc__)
    wl_ns = [100, 1_000, 10_000]
    lg_ns = [100] if args.quick else [100, 1_000]
    durability = "exit" if args.quick else "sync"
    synchronous = "NORMAL"
    variants = ["plain"] + (["delta"] if c.has_delta_channel() else []) + ["replace"]
    started = time.perf_counter()
    results: dict[str, Any] = {
        "env": c.environment(),
        "settings": {
            "quick": args.quick,
            "snapshot_every": SNAPSHOT_EVERY,
            "wayline_durability": durability,
            "synchronous": synchronous,
            "item_chars": c.ITEM_CHARS,
            "langgraph_delta_channel": c.has_delta_channel(),
            "langgraph_delta_snapshot_frequency": 100,
            "langgraph_byte_counting": "JsonPlusSerializer.dumps_typed lengths in put "
            "(checkpoints) and put_writes (writes) + metadata JSON length in put",
        },
        "wayline": [],
        "langgraph": [],
    }
    with c.temp_dir("bytes") as tmp:
        for workload in ("accumulate", "replace"):
            for n in wl_ns:
                print(f"wayline {workload} n={n} ...", flush=True)
                results["wayline"].append(wayline_arm(tmp, workload, n, durability, synchronous))
        for variant in variants:
            for n in lg_ns:
                print(f"langgraph {variant} n={n} ...", flush=True)
                results["langgraph"].append(langgraph_arm(tmp, variant, n, synchronous))
        results["subgraph"] = subgraph_bytes.run(tmp, wl_ns[:2], lg_ns, durability)
        results["messages"] = messages_bytes.run(tmp, wl_ns[:2], lg_ns, durability)
    results["elapsed_seconds"] = time.perf_counter() - started
    report(results)
    subgraph_bytes.report(results["subgraph"])
    messages_bytes.report(results["messages"])
    path = c.write_json("checkpoint_bytes", results)
    print(f"\nJSON: {path}  ({results['elapsed_seconds']:.0f} s)")


def report(results: dict[str, Any]) -> None:
    wl = results["wayline"]
    tables = sorted({t for r in wl for t in r["by_table"]}, key=_table_order)
    rows = []
    for r in wl:
        rows.append(
            [
                r["workload"],
                c.fmt_num(r["n"]),
                *(c.fmt_bytes(r["by_table"].get(t, 0)) for t in tables),
                c.fmt_bytes(r["total"]),
                c.fmt_bytes(r["payload"]),
                c.fmt_num(r["bytes_per_step"]),
                f"{r['first_to_last']:.2f}",
                f"{r['write_amplification']:.2f}",
                c.fmt_bytes(r["file_size"]),
            ]
        )
    s = results["settings"]
    c.print_table(
        f"wayline: bytes written (instrument), snapshot_every {s['snapshot_every']}, "
        f"durability {s['wayline_durability']}",
        [
            "workload",
            "n",
            *tables,
            "total",
            "payload",
            "B/step",
            "last/first decile",
            "write amp",
            "SQLite file",
        ],
        rows,
    )

    rows = []
    for r in wl:
        e, w = r["resume"]["end"], r["resume"]["worst"]
        rows.append(
            [
                r["workload"],
                c.fmt_num(r["n"]),
                c.fmt_num(e["snapshot_step"]),
                e["folds"],
                e["rows_read"],
                f"{e['cold_ms']:.2f}",
                c.fmt_num(w["step"]),
                c.fmt_num(w["snapshot_step"]),
                w["folds"],
                w["rows_read"],
                f"{w['cold_ms']:.2f}",
                "ok" if r["resume"]["verify"]["ok"] else "MISMATCH",
            ]
        )
    c.print_table(
        "wayline: resume in a fresh process (get_state at the last step, and at step n-1)",
        [
            "workload",
            "n",
            "snapshot",
            "folds",
            "rows read",
            "ms",
            "at step",
            "snapshot",
            "folds",
            "rows read",
            "ms",
            "verify",
        ],
        rows,
    )

    by_key = {(r["workload"], r["n"]): r for r in wl}
    rows = []
    for r in results["langgraph"]:
        mine = by_key.get((c.lg_workload(r["variant"]), r["n"]))
        ser = r["serialized"]
        rows.append(
            [
                r["variant"],
                c.fmt_num(r["n"]),
                c.fmt_bytes(ser.get("checkpoints", 0)),
                c.fmt_bytes(ser.get("writes", 0)),
                c.fmt_bytes(ser.get("metadata", 0)),
                c.fmt_bytes(r["total"]),
                c.fmt_num(r["bytes_per_step"]),
                c.fmt_bytes(r["file_size"]),
                f"{r['calls'].get('put', 0)}+{r['calls'].get('put_writes', 0)}",
                c.fmt_bytes(mine["total"]) if mine else "-",
                c.fmt_ratio(r["total"] / mine["total"]) if mine else "-",
                c.fmt_ratio(r["file_size"] / mine["file_size"]) if mine else "-",
                f"{r['total'] / mine['payload']:.1f}" if mine else "-",
            ]
        )
    c.print_table(
        "LangGraph SqliteSaver (durability sync): bytes serialized by put + put_writes, "
        "against wayline at the same n",
        [
            "variant",
            "n",
            "checkpoints",
            "writes",
            "metadata",
            "total",
            "B/step",
            "SQLite file",
            "put+put_writes",
            "wayline total",
            "LG/wayline bytes",
            "LG/wayline file",
            "LG bytes / payload",
        ],
        rows,
    )

    goals = goal_rows(results)
    results["goals"] = goals
    c.print_table(
        "Goals",
        ["goal", "arm", "measured", "limit", "result"],
        [[g["goal"], g["arm"], g["measured"], g["limit"], c.verdict(g["ok"])] for g in goals],
    )


def goal_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    goals = []
    every = results["settings"]["snapshot_every"]
    for workload in ("accumulate", "replace"):
        arm = [r for r in results["wayline"] if r["workload"] == workload]
        by_n = {r["n"]: r for r in arm}
        if 100 in by_n and 10_000 in by_n:
            ratio = by_n[10_000]["bytes_per_step"] / by_n[100]["bytes_per_step"]
            goals.append(
                {
                    "goal": "avg B/step at n=10,000 / at n=100",
                    "arm": workload,
                    "measured": f"{ratio:.2f} ({by_n[10_000]['bytes_per_step']:,.0f} / "
                    f"{by_n[100]['bytes_per_step']:,.0f})",
                    "limit": "<= 1.5",
                    "ok": ratio <= 1.5,
                    "value": ratio,
                }
            )
        worst_wa = max(r["write_amplification"] for r in arm)
        goals.append(
            {
                "goal": "write amplification, every n",
                "arm": workload,
                "measured": ", ".join(f"{r['write_amplification']:.2f}" for r in arm),
                "limit": "<= 3",
                "ok": worst_wa <= 3,
                "value": worst_wa,
            }
        )
        folds = [max(r["resume"]["end"]["folds"], r["resume"]["worst"]["folds"]) for r in arm]
        goals.append(
            {
                "goal": "folds at resume (fresh process, worst of last step and n-1)",
                "arm": workload,
                "measured": ", ".join(str(f) for f in folds),
                "limit": f"<= {every}",
                "ok": max(folds) <= every,
                "value": max(folds),
            }
        )
        goals.append(
            {
                "goal": "verify (reconstruction == committed digest)",
                "arm": workload,
                "measured": ", ".join(
                    "ok" if r["resume"]["verify"]["ok"] else "MISMATCH" for r in arm
                ),
                "limit": "all ok",
                "ok": all(r["resume"]["verify"]["ok"] for r in arm),
                "value": None,
            }
        )
    return goals


def _table_order(name: str) -> tuple[int, str]:
    order = ["deltas", "snapshots", "segments", "blobs", "pending_writes", "interrupts"]
    return (order.index(name) if name in order else len(order), name)


if __name__ == "__main__":
    main()
