"""What data classes cost: commits with SQLite's secure_delete on (the default) and off,
classified values sealed under a subject key on an encrypted store, and the erasures
themselves (rows rewritten and seconds), beside LangGraph's SQLite saver in the same run.

Workload: ``bench/_common.py``'s accumulating run (one ~500-byte item per step), sync
durability, SQLite synchronous=FULL, snapshot_every 100; the item list is labelled
``Classified("pii")`` for the arms that need a class. Medians of the repeats.

    python bench/data_classes.py [--quick]     # --quick: 200 steps x 3; default 1,000 x 5
    python bench/data_classes.py --secure-delete-only   # the on/off pair, 500 steps x 9
"""

from __future__ import annotations

import operator
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import _common as c

import wayline
from wayline import Classified


class State(TypedDict):
    log: Annotated[list[str], operator.add, Classified("pii")]
    n: int


def labelled_graph(n: int) -> Any:
    def node(s: dict[str, Any]) -> dict[str, Any]:
        return {"log": [c.item(s["n"])], "n": s["n"] + 1}

    g = wayline.StateGraph(State)
    g.add_node("step", node)
    g.add_edge(wayline.START, "step")
    g.add_conditional_edges("step", lambda s: wayline.END if s["n"] >= n else "step")
    return g


def keys() -> Any:
    from wayline.store.encrypted import StaticKeys

    return StaticKeys({"default": {"k1": os.urandom(32)}}, {"default": "k1"})


def wayline_run(
    path: Path, n: int, *, secure: bool, labelled: bool, sealed: bool, subject: bool
) -> tuple[wayline.Store, float, int]:
    url = f"sqlite:///{path}" + ("" if secure else "?secure_delete=off")
    store = wayline.connect(url, keys=keys() if sealed else None)
    graph = labelled_graph(n) if labelled else c.wayline_graph("accumulate", n)
    app = graph.compile(store, snapshot_every=100)
    cfg = c.config()
    if subject:
        cfg["configurable"]["subject"] = "customer-42"
    t = time.perf_counter()
    out = app.invoke(c.initial("accumulate"), cfg, durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n and len(out["log"]) == n
    written = sum(m.bytes for m in store.load_meter("default", c.RUN_ID))
    return store, seconds, written


def langgraph_run(path: Path, n: int) -> float:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = c.lg_connect(path)
    saver = SqliteSaver(conn)
    saver.setup()
    app = c.langgraph_graph("plain", n).compile(checkpointer=saver)
    t = time.perf_counter()
    out = app.invoke(c.initial("accumulate"), c.config(), durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n
    conn.close()
    return seconds


LG = "LangGraph plain, SqliteSaver"
ARMS = {
    "wayline, secure_delete on (default)": dict(
        secure=True, labelled=False, sealed=False, subject=False
    ),
    "wayline, secure_delete off": dict(secure=False, labelled=False, sealed=False, subject=False),
    "wayline, pii label, plaintext": dict(secure=True, labelled=True, sealed=False, subject=True),
    "wayline, encrypted, no subject": dict(secure=True, labelled=True, sealed=True, subject=False),
    "wayline, encrypted, subject key": dict(secure=True, labelled=True, sealed=True, subject=True),
}


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="200 steps x 3")
    p.add_argument(
        "--secure-delete-only",
        action="store_true",
        help="only the secure_delete on/off pair and LangGraph, 500 steps x 9",
    )
    args = p.parse_args()
    n, repeats = (200, 3) if args.quick else (1_000, 5)
    if args.secure_delete_only:
        n, repeats = 500, 9
        for name in list(ARMS)[2:]:
            del ARMS[name]
    c.prepare_items(n + 1)
    results: dict[str, Any] = {"steps": n, "repeats": repeats, "arms": {}, "erasure": {}}
    with c.temp_dir("data-classes") as tmp:
        times: dict[str, list[float]] = {name: [] for name in [*ARMS, LG]}
        written: dict[str, int | None] = {LG: None}
        for i in range(repeats):  # arms interleaved, so the machine's drift hits them alike
            for a, (name, opts) in enumerate(ARMS.items()):
                store, seconds, written[name] = wayline_run(tmp / f"arm{a}-{i}.db", n, **opts)
                times[name].append(seconds)
                if i == repeats - 1 and opts["labelled"]:
                    from wayline.control.erasure import erase_subject, redact_run

                    t = time.perf_counter()
                    if opts["subject"]:
                        receipt = erase_subject(store, "default", "customer-42", classes=["pii"])
                        rows = receipt["rows"]
                    else:
                        rows = redact_run(store, "default", c.RUN_ID, ["pii"])
                    results["erasure"][name] = {"seconds": time.perf_counter() - t, "rows": rows}
                store.close()
            times[LG].append(langgraph_run(tmp / f"lg-{i}.db", n))
        for name in times:
            results["arms"][name] = {"seconds": times[name], "bytes": written[name]}
    base = c.median(results["arms"]["wayline, secure_delete on (default)"]["seconds"])
    lg_rate = n / c.median(results["arms"][LG]["seconds"])
    rows = []
    for name, arm in results["arms"].items():
        rate = n / c.median(arm["seconds"])
        rows.append(
            [
                name,
                c.fmt_num(rate),
                c.fmt_ratio(rate / (n / base)),
                c.fmt_ratio(rate / lg_rate),
                c.fmt_bytes(arm["bytes"]),
            ]
        )
    c.print_table(
        f"{n} steps, sync, SQLite FULL (median of {repeats})",
        ["arm", "steps/s", "vs default", "vs LangGraph", "bytes written"],
        rows,
    )
    if results["erasure"]:
        c.print_table(
            "erasing the pii class of the run",
            ["arm", "seconds", "deltas", "snapshots", "segments"],
            [
                [
                    name,
                    c.fmt_num(e["seconds"], 3),
                    e["rows"].get("deltas"),
                    e["rows"].get("snapshots"),
                    e["rows"].get("segments"),
                ]
                for name, e in results["erasure"].items()
            ],
        )
    print(f"wrote {c.write_json('data_classes', {**results, 'env': c.environment()})}")


if __name__ == "__main__":
    main()
