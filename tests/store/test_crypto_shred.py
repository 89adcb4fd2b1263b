"""Crypto-shredding on an encrypted store: a subject's classified values are sealed under
its own data key; erasing the subject destroys the key, so ciphertext left anywhere (rows
restored from a copy taken before the erasure; with the keys outside the database, a whole
copy of the database) reads back only as ``Redacted`` tombstones, never as the values,
while other classes and other subjects read as before."""

from __future__ import annotations

import operator
import os
import shutil
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from fault_rows import sql
from stored_rows import stored_rows

import wayline
from wayline import END, START, Classified, Redacted, StateGraph
from wayline.store.base import Store
from wayline.store.encrypted import StaticKeys
from wayline.store.subject_keys import MAGIC, MemoryVault

PII = "PII-c0ffee-secret"
KEEP = "KEEP-b4d9-notes"
KEY = os.urandom(32)


class State(TypedDict):
    msgs: Annotated[list[str], operator.add, Classified("pii")]
    doc: Annotated[str, Classified("pii")]
    notes: Annotated[list[str], operator.add]
    n: int


def build(store: Store) -> wayline.CompiledGraph:
    def step(s: State) -> dict[str, Any]:
        return {"msgs": [f"{PII}-{s['n']}"], "notes": [f"{KEEP}-{s['n']}"], "n": s["n"] + 1}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= 4 else "step")
    return g.compile(store, snapshot_every=2)


def start(app: wayline.CompiledGraph, run_id: str, subject: str) -> None:
    doc = f"{PII} {subject} " + "z" * 70_000  # a blob
    cfg = {"configurable": {"thread_id": run_id, "subject": subject}}
    app.invoke({"n": 0, "msgs": [], "notes": [], "doc": doc}, cfg)


def values(app: wayline.CompiledGraph, run_id: str) -> dict[str, Any]:
    return app.get_state({"configurable": {"thread_id": run_id}}).values


class VaultKeys(StaticKeys, MemoryVault):
    """A key provider whose subject keys live outside the database (as in a KMS)."""

    def __init__(self) -> None:
        StaticKeys.__init__(self, {"default": {"k1": KEY}}, {"default": "k1"})
        MemoryVault.__init__(self)


# Encryption at rest is a property of a database file or schema: not of ``:memory:``.
@pytest.mark.parametrize("store_url", ["sqlite-file", "postgres"], indirect=True)
def test_rows_copied_before_the_erasure_read_back_as_tombstones(store_url: str) -> None:
    store = wayline.connect(store_url, keys=StaticKeys({"default": {"k1": KEY}}, {"default": "k1"}))
    try:
        app = build(store)
        start(app, "alice-1", "alice")
        start(app, "bob-1", "bob")
        tables = ("deltas", "snapshots", "segments", "blob_refs")
        copy = {t: sql(store, f"SELECT * FROM {t} WHERE run_id = 'alice-1'") for t in tables}
        copy["blobs"] = sql(store, "SELECT * FROM blobs")
        sealed = [r["payload"] for r in copy["deltas"]]
        assert all(bytes(p)[:4] == b"WLE1" for p in sealed)  # the tenant key's seal...
        receipt = wayline.Wayline(store).erase_subject("alice", classes=["pii"])
        assert receipt["keys_destroyed"] == 1
        # Restore the copy of the data tables (as from a backup without the key table).
        for table, rows in copy.items():
            sql(
                store,
                f"DELETE FROM {table}" + ("" if table == "blobs" else " WHERE run_id = 'alice-1'"),
            )
            for row in rows:
                cols = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                sql(store, f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(row.values()))
        opened = store.load_deltas("default", "alice-1", -1, 10)
        assert sum(MAGIC in d.payload for d in opened) == 5  # input + 4 steps wrote pii
        restored = values(app, "alice-1")
        for key in ("msgs", "doc"):  # ...and under it, the subject key's: destroyed
            assert isinstance(restored[key], Redacted) and restored[key].cls == "pii"
        assert restored["notes"] == [f"{KEEP}-{i}" for i in range(4)]
        bob = values(app, "bob-1")
        assert bob["msgs"] == [f"{PII}-{i}" for i in range(4)] and bob["doc"].startswith(PII)
        assert not any(PII.encode() in row or KEEP.encode() in row for _, row in stored_rows(store))
        assert "alice" not in str(sql(store, "SELECT * FROM subject_keys"))  # digests only
    finally:
        store.close()


def test_a_whole_copy_of_the_database_is_unreadable_once_the_vault_key_is_gone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.db"
    keys = VaultKeys()
    store = wayline.connect(f"sqlite:///{path}", keys=keys)
    app = build(store)
    start(app, "alice-1", "alice")
    start(app, "bob-1", "bob")
    store.scrub()  # the WAL folded into the file: the copy is the whole database
    backup = tmp_path / "backup.db"
    shutil.copy(path, backup)
    assert MAGIC in backup.read_bytes() or b"WLE1" in backup.read_bytes()
    wayline.Wayline(store).erase_subject("alice", classes=["pii"])
    store.close()
    old = wayline.connect(f"sqlite:///{backup}", keys=keys)  # the backup, every key it needs
    try:
        old_app = build(old)
        alice = values(old_app, "alice-1")
        assert isinstance(alice["msgs"], Redacted) and isinstance(alice["doc"], Redacted)
        assert alice["notes"] == [f"{KEEP}-{i}" for i in range(4)]  # default class: kept
        assert values(old_app, "bob-1")["msgs"] == [f"{PII}-{i}" for i in range(4)]
        exported = wayline.Wayline(old).export_subject("alice")
        assert PII not in str(exported) and KEEP in str(exported)
    finally:
        old.close()
