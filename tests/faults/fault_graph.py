"""A run that leaves a row in every table that stores run data, and raw access to those rows
for tests that damage them and put them back.

The graph: an input step, four steps of ``grow`` (an accumulating list, snapshotted at
step 3 so segments exist, and one large value stored as a blob), then ``note`` and
``ask`` in parallel: ``note`` finishes (its writes are kept as pending writes), ``ask``
performs an effect and then asks a question (an interrupt). The run waits at step 4.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

from fault_rows import rows_of

from wayline import END, START, Command, StateGraph, interrupt
from wayline.graph.compiled import CompiledGraph
from wayline.graph.context import NodeContext
from wayline.store.base import Store

BIG = "B" * 2_000
"""Above the graph's blob threshold: stored once as a blob."""


class FaultState(TypedDict):
    items: Annotated[list[str], operator.add]
    doc: str
    n: int
    log: Annotated[list[str], operator.add]
    answer: str
    receipt: str


def build(store: Store, charges: Counter[str] | None = None) -> CompiledGraph:
    charges = charges if charges is not None else Counter()

    def grow(s: FaultState) -> dict[str, Any]:
        n = s["n"] + 1
        return {"items": [f"item-{n}"], "n": n, **({"doc": BIG + str(n)} if n == 2 else {})}

    def log(s: FaultState) -> dict[str, Any]:
        return {"log": [f"logged at {s['n']}"]}

    def ask(s: FaultState, ctx: NodeContext) -> dict[str, Any]:
        def charge(key: str) -> str:
            charges[key] += 1
            return f"receipt-{s['n']}"

        receipt = ctx.effect("charge", charge, request={"n": s["n"]})
        answer = interrupt({"question": "ok?", "n": s["n"]})
        return {"answer": answer, "receipt": receipt}

    g = StateGraph(FaultState, name="faults")
    g.add_node("grow", grow)
    g.add_node("note", log)
    g.add_node("ask", ask)
    g.add_edge(START, "grow")
    g.add_conditional_edges("grow", lambda s: "grow" if s["n"] < 4 else ["note", "ask"])
    g.add_edge("note", END)
    g.add_edge("ask", END)
    return g.compile(store, snapshot_every=3, blob_threshold=1_000)


START_INPUT: dict[str, Any] = {
    "items": [],
    "doc": "",
    "n": 0,
    "log": [],
    "answer": "",
    "receipt": "",
}
RESUME: Command[Any] = Command(resume="yes")


def cfg(thread: str = "f-1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def reference(store: Store) -> dict[str, Any]:
    """The final state of the same run, uninterrupted and undamaged, on ``store``."""
    app = build(store)
    app.invoke(START_INPUT, cfg("reference"))
    return app.invoke(RESUME, cfg("reference"))


def everything(store: Store, run_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the run (bar the run row's error and clock), to show nothing was
    rewritten while a damaged run was refused."""
    out = {}
    for table in ("deltas", "snapshots", "segments", "pending_writes", "interrupts", "effects"):
        out[table] = sorted(
            tuple(bytes(v) if isinstance(v, memoryview) else v for v in r.values())
            for r in rows_of(store, table, run_id)
        )
    (run,) = rows_of(store, "runs", run_id)
    out["runs"] = [(run["status"], run["step"], run["next_nodes"], run["state_digest"])]
    return out
