"""Every row a store holds, read raw (under any encryption), for tests that look for bytes
that must, or must not, be there."""

from __future__ import annotations

from wayline.store.base import Store


def stored_rows(store: Store) -> list[tuple[str, bytes]]:
    """(table, the row's columns as bytes joined by NUL) for every row of every table."""
    out = []
    for table in store.table_names():
        for row in store._read_dicts(f"SELECT * FROM {table}", ()):  # type: ignore[attr-defined]
            values = [
                bytes(v) if isinstance(v, bytes | memoryview) else str(v).encode()
                for v in row.values()
            ]
            out.append((table, b"\x00".join(values)))
    return out
