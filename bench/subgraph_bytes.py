"""The subgraph workload of ``checkpoint_bytes.py``: a parent graph whose one node is a
compiled subgraph running ``n`` steps, each appending a ~500-byte item to the child's
accumulating ``log``; the parent shares only the counter ``n`` with it.

wayline checkpoints the child as a run of its own (``<parent>::sub:<task>``), so its bytes
per step should stay flat as in the plain workload; LangGraph checkpoints the subgraph under
its namespace with the same saver as the parent. Bytes: wayline from the instrument
(parent and child runs summed), LangGraph from the counting serializer.
"""

from __future__ import annotations

import importlib
import operator
import time
from typing import Annotated, Any, TypedDict

import _common as c


class ChildState(TypedDict):
    log: Annotated[list[Any], operator.add]
    n: int


class ParentState(TypedDict):
    n: int


def _build(framework: str, n: int) -> Any:
    # the same graph in either framework: the API is chosen at run time
    api: Any = importlib.import_module("wayline" if framework == "wayline" else "langgraph.graph")
    END, START, StateGraph = api.END, api.START, api.StateGraph
    child = StateGraph(ChildState)
    child.add_node("step", lambda s: {"log": [c.item(s["n"])], "n": s["n"] + 1})
    child.add_edge(START, "step")
    child.add_conditional_edges("step", lambda s: "step" if s["n"] < n else END)
    parent = StateGraph(ParentState)
    parent.add_node("sub", child.compile())
    parent.add_edge(START, "sub")
    parent.add_edge("sub", END)
    return parent


def wayline_arm(tmp: Any, n: int, durability: str, synchronous: str) -> dict[str, Any]:
    import wayline
    from wayline.instrument import byte_report

    c.prepare_items(n)
    path = tmp / f"wayline-subgraph-{n}.db"
    store = wayline.connect(c.wayline_url(path, synchronous))
    app = _build("wayline", n).compile(store)
    t = time.perf_counter()
    out = app.invoke({"n": 0}, c.config(), durability=durability)
    seconds = time.perf_counter() - t
    assert out["n"] == n, out
    runs = [r.run_id for r in store.list_runs(c.TENANT, limit=10)]
    child_id = next(r for r in runs if r.startswith(f"{c.RUN_ID}::sub:"))
    parent, child = byte_report(store, c.TENANT, c.RUN_ID), byte_report(store, c.TENANT, child_id)
    head, tail = child.decile_bytes_per_step()
    store.close()
    return {
        "framework": "wayline",
        "workload": "subgraph",
        "n": n,
        "run_seconds": seconds,
        "parent_total": parent.total,
        "child_total": child.total,
        "total": parent.total + child.total,
        "bytes_per_step": (parent.total + child.total) / n,
        "child_first_decile_bytes_per_step": head,
        "child_last_decile_bytes_per_step": tail,
        "first_to_last": child.first_to_last,
        "file_size": c.sqlite_file_size(path),
    }


def langgraph_arm(tmp: Any, n: int, synchronous: str) -> dict[str, Any]:
    c.prepare_items(n)
    path = tmp / f"langgraph-subgraph-{n}.db"
    conn = c.lg_connect(path, synchronous)
    counter = c.ByteCounter()
    app = _build("langgraph", n).compile(checkpointer=c.counting_saver(conn, counter))
    t = time.perf_counter()
    out = app.invoke({"n": 0}, c.config(), durability="sync")
    seconds = time.perf_counter() - t
    assert out["n"] == n, out
    conn.close()
    return {
        "framework": "langgraph",
        "workload": "subgraph",
        "n": n,
        "run_seconds": seconds,
        "total": counter.total,
        "bytes_per_step": counter.total / n,
        "file_size": c.sqlite_file_size(path),
    }


def run(tmp: Any, wl_ns: list[int], lg_ns: list[int], durability: str) -> list[dict[str, Any]]:
    return c.run_workload("subgraph", tmp, wl_ns, lg_ns, durability, wayline_arm, langgraph_arm)


def report(rows: list[dict[str, Any]]) -> None:
    c.report_workload(
        "subgraph workload: a compiled subgraph appending ~500 B per step (parent + child)",
        "child last/first decile",
        rows,
    )
