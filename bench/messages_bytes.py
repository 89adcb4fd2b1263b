"""The chat workload of ``checkpoint_bytes.py``: a ``MessagesState`` graph whose node adds
one ~500-byte ``AIMessage`` per step (``add_messages``), n steps in one run.

wayline stores the history as a ``MessageLog`` (deltas, and snapshots of only the new
messages); LangGraph's ``add_messages`` channel is checkpointed whole. Bytes as in the
other workloads: the instrument for wayline, the counting serializer for LangGraph.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import _common as c


def _build(framework: str, n: int) -> Any:
    from langchain_core.messages import AIMessage

    # the same graph in either framework: the API is chosen at run time
    name = "wayline.graph" if framework == "wayline" else "langgraph.graph"
    api: Any = importlib.import_module(name)
    END, START, MessagesState, StateGraph = api.END, api.START, api.MessagesState, api.StateGraph

    def talk(state: Any) -> dict[str, Any]:
        step = len(state["messages"])
        return {"messages": [AIMessage(c.item(step), id=f"m{step}")]}

    g = StateGraph(MessagesState)
    g.add_node("talk", talk)
    g.add_edge(START, "talk")
    g.add_conditional_edges("talk", lambda s: "talk" if len(s["messages"]) <= n else END)
    return g


def wayline_arm(tmp: Any, n: int, durability: str, synchronous: str) -> dict[str, Any]:
    import wayline
    from wayline.instrument import byte_report

    c.prepare_items(n + 1)
    path = tmp / f"wayline-messages-{n}.db"
    store = wayline.connect(c.wayline_url(path, synchronous))
    app = _build("wayline", n).compile(store)
    t = time.perf_counter()
    out = app.invoke({"messages": [("user", "go")]}, c.config(), durability=durability)
    seconds = time.perf_counter() - t
    assert len(out["messages"]) == n + 1, len(out["messages"])
    r = byte_report(store, c.TENANT, c.RUN_ID)
    store.close()
    return {
        "framework": "wayline",
        "workload": "messages",
        "n": n,
        "run_seconds": seconds,
        "total": r.total,
        "bytes_per_step": r.total / n,
        "first_to_last": r.first_to_last,
        "file_size": c.sqlite_file_size(path),
    }


def langgraph_arm(tmp: Any, n: int, synchronous: str) -> dict[str, Any]:
    c.prepare_items(n + 1)
    path = tmp / f"langgraph-messages-{n}.db"
    conn = c.lg_connect(path, synchronous)
    counter = c.ByteCounter()
    app = _build("langgraph", n).compile(checkpointer=c.counting_saver(conn, counter))
    t = time.perf_counter()
    out = app.invoke({"messages": [("user", "go")]}, c.config(), durability="sync")
    seconds = time.perf_counter() - t
    assert len(out["messages"]) == n + 1, len(out["messages"])
    conn.close()
    return {
        "framework": "langgraph",
        "workload": "messages",
        "n": n,
        "run_seconds": seconds,
        "total": counter.total,
        "bytes_per_step": counter.total / n,
        "file_size": c.sqlite_file_size(path),
    }


def run(tmp: Any, wl_ns: list[int], lg_ns: list[int], durability: str) -> list[dict[str, Any]]:
    return c.run_workload("messages", tmp, wl_ns, lg_ns, durability, wayline_arm, langgraph_arm)


def report(rows: list[dict[str, Any]]) -> None:
    c.report_workload(
        "chat workload: MessagesState gaining a ~500 B AIMessage per step (add_messages)",
        "last/first decile",
        rows,
    )
