"""Raw access to the rows a store holds for a run, for tests that damage a row and put it
back (the fault suite, the fault property test)."""

from __future__ import annotations

from typing import Any

from wayline.store.base import Store

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


def flip_row(store: Store, table: str, row: dict[str, Any]) -> None:
    column = PAYLOAD[table]
    data = bytearray(bytes(row[column]))
    data[len(data) // 2] ^= 0x20
    clause, params = where(table, row)
    sql(store, f"UPDATE {table} SET {column} = ? WHERE {clause}", (bytes(data), *params))


def truncate_row(store: Store, table: str, row: dict[str, Any]) -> None:
    column = PAYLOAD[table]
    data = bytes(row[column])
    clause, params = where(table, row)
    sql(store, f"UPDATE {table} SET {column} = ? WHERE {clause}", (data[: len(data) // 2], *params))


def delete_row(store: Store, table: str, row: dict[str, Any]) -> None:
    clause, params = where(table, row)
    sql(store, f"DELETE FROM {table} WHERE {clause}", params)


def restore_row(store: Store, table: str, row: dict[str, Any]) -> None:
    clause, params = where(table, row)
    sql(store, f"DELETE FROM {table} WHERE {clause}", params)
    columns = list(row)
    values = tuple(bytes(v) if isinstance(v, memoryview) else v for v in row.values())
    marks = ", ".join("?" for _ in columns)
    sql(store, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", values)
