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
RESUME = Command(resume="yes")


def cfg(thread: str = "f-1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def reference(store: Store) -> dict[str, Any]:
    """The final state of the same run, uninterrupted and undamaged, on ``store``."""
    app = build(store)
    app.invoke(START_INPUT, cfg("reference"))
    return app.invoke(RESUME, cfg("reference"))


# -- raw rows ---------------------------------------------------------------------------

PAYLOAD = {
    "deltas": "payload",
    "snapshots": "payload",
    "segments": "payload",
    "pending_writes": "payload",
    "interrupts": "value",
    "blobs": "payload",
    "effects": "result",
    "runs": "inbox",
}


def sql(store: Store, query: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Raw SQL on the store's own connection (``?`` placeholders on both backends)."""
    q = query.replace("?", store.placeholder)  # type: ignore[attr-defined]
    if query.lstrip().upper().startswith("SELECT"):
        return list(store._read_dicts(q, params))  # type: ignore[attr-defined]
    with store._tx() as db:  # type: ignore[attr-defined]
        db.execute(q, params)
    return []


def rows_of(store: Store, table: str, run_id: str) -> list[dict[str, Any]]:
    if table == "blobs":
        return sql(store, "SELECT * FROM blobs WHERE tenant_id = 'default'")
    return sql(
        store, f"SELECT * FROM {table} WHERE tenant_id = 'default' AND run_id = ?", (run_id,)
    )


def pick(store: Store, table: str, run_id: str) -> dict[str, Any]:
    """The row of ``table`` a test damages: one whose payload the run needs to go on."""
    rows = [r for r in rows_of(store, table, run_id) if r[PAYLOAD[table]] is not None]
    assert rows, f"the scenario left no {table} row"
    if table in ("deltas", "snapshots"):  # the ones a read of the waiting run uses
        return max(rows, key=lambda r: r["step"])
    if table == "effects":
        return next(r for r in rows if r["kind"] == "effect")
    return rows[0]


def where(table: str, row: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    keys = {
        "deltas": ("tenant_id", "run_id", "step"),
        "snapshots": ("tenant_id", "run_id", "step"),
        "segments": ("tenant_id", "run_id", "seg_id"),
        "pending_writes": ("tenant_id", "run_id", "step", "task_id"),
        "interrupts": ("tenant_id", "run_id", "step", "task_id", "idx"),
        "blobs": ("tenant_id", "digest"),
        "effects": ("tenant_id", "effect_key"),
        "runs": ("tenant_id", "run_id"),
    }[table]
    return " AND ".join(f"{k} = ?" for k in keys), tuple(row[k] for k in keys)


def flip(store: Store, table: str, row: dict[str, Any]) -> None:
    column = PAYLOAD[table]
    data = bytearray(bytes(row[column]))
    data[len(data) // 2] ^= 0x20
    clause, params = where(table, row)
    sql(store, f"UPDATE {table} SET {column} = ? WHERE {clause}", (bytes(data), *params))


def truncate(store: Store, table: str, row: dict[str, Any]) -> None:
    column = PAYLOAD[table]
    data = bytes(row[column])
    clause, params = where(table, row)
    sql(store, f"UPDATE {table} SET {column} = ? WHERE {clause}", (data[: len(data) // 2], *params))


def delete(store: Store, table: str, row: dict[str, Any]) -> None:
    clause, params = where(table, row)
    sql(store, f"DELETE FROM {table} WHERE {clause}", params)


def restore(store: Store, table: str, row: dict[str, Any]) -> None:
    clause, params = where(table, row)
    sql(store, f"DELETE FROM {table} WHERE {clause}", params)
    columns = list(row)
    values = tuple(bytes(v) if isinstance(v, memoryview) else v for v in row.values())
    marks = ", ".join("?" for _ in columns)
    sql(store, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", values)


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
