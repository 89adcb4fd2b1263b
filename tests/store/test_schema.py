"""The schema: numbered migrations build exactly schema.sql, an old database is refused
until upgraded, and an upgrade keeps a run that was mid-way resumable."""

from __future__ import annotations

import operator
import re
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.errors import StoreError
from wayline.store.payloads import checksum
from wayline.store.records import CommitBatch, SnapshotRecord
from wayline.store.sql_store import SCHEMA_VERSION, migrations, split_statements


def sqlite_shape(db: sqlite3.Connection) -> dict[str, Any]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {
        t: (
            [tuple(r[1:]) for r in db.execute(f"PRAGMA table_info({t})")],
            sorted(
                tuple(db.execute(f"PRAGMA index_info({i[1]})").fetchall())
                for i in db.execute(f"PRAGMA index_list({t})")
            ),
        )
        for t in sorted(tables)
    }


def schema_sql(dialect: str) -> str:
    return resources.files("wayline.store.sql").joinpath(dialect, "schema.sql").read_text()


def test_sqlite_migrations_build_schema_sql(tmp_path: Path) -> None:
    wayline.connect(f"sqlite:///{tmp_path / 'migrated.db'}").close()
    reference = sqlite3.connect(tmp_path / "reference.db")
    for statement in split_statements(schema_sql("sqlite")):
        reference.execute(statement)
    assert sqlite_shape(sqlite3.connect(tmp_path / "migrated.db")) == sqlite_shape(reference)


def test_postgres_migrations_build_schema_sql(pg_base_url: str) -> None:
    import psycopg

    def shape(schema: str) -> Any:
        with psycopg.connect(pg_base_url, autocommit=True) as conn:
            columns = conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable, column_default "
                "FROM information_schema.columns WHERE table_schema = %s "
                "ORDER BY table_name, ordinal_position",
                (schema,),
            ).fetchall()
            indexes = conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s "
                "ORDER BY indexname",
                (schema,),
            ).fetchall()

        def local(text: Any) -> Any:  # names qualified by the schema they live in
            return text.replace(f"{schema}.", "") if isinstance(text, str) else text

        return [tuple(map(local, c)) for c in columns], [(n, local(d)) for n, d in indexes]

    migrated = "t_migrated_shape"
    sep = "&" if "?" in pg_base_url else "?"
    wayline.connect(f"{pg_base_url}{sep}schema={migrated}").close()
    with psycopg.connect(pg_base_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS t_reference_shape")
        conn.execute("SET search_path TO t_reference_shape")
        for statement in split_statements(schema_sql("postgres")):
            conn.execute(statement)
    assert shape(migrated) == shape("t_reference_shape")


def test_both_dialects_have_the_same_migrations() -> None:
    names = [[n for _, n, _ in migrations(d)] for d in ("sqlite", "postgres")]
    assert names[0] == names[1]
    assert migrations("sqlite")[-1][0] == SCHEMA_VERSION
    assert re.search(rf"version {SCHEMA_VERSION}\b", schema_sql("sqlite"))


class S(TypedDict):
    log: Annotated[list[int], operator.add]
    n: int


def counter() -> Any:
    g = StateGraph(S)
    g.add_node("count", lambda s: {"log": [s["n"]], "n": s["n"] + 1})
    g.add_edge(START, "count")
    g.add_conditional_edges("count", lambda s: "count" if s["n"] < 12 else END)
    return g


def test_upgrade_from_the_previous_version_keeps_runs_resumable(tmp_path: Path) -> None:
    # A run half done on the current schema, copied into a database at version 1.
    current = tmp_path / "current.db"
    app = counter().compile(f"sqlite:///{current}", snapshot_every=4)
    with pytest.raises(wayline.errors.StepLimitError):
        app.invoke({"log": [], "n": 0}, {"configurable": {"thread_id": "r"}, "recursion_limit": 7})
    old = tmp_path / "old.db"
    v1 = sqlite3.connect(old)
    (_, _, initial), *_ = migrations("sqlite")
    for statement in split_statements(initial):
        v1.execute(statement)
    v1.execute("INSERT INTO wayline_meta VALUES ('schema_version', '1')")
    v1.execute("ATTACH DATABASE ? AS cur", (str(current),))
    for table in ("deltas", "snapshots", "segments", "meter", "blobs", "blob_refs"):
        cols = ", ".join(r[1] for r in v1.execute(f"PRAGMA main.table_info({table})"))
        v1.execute(f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM cur.{table}")
    cols = ", ".join(r[1] for r in v1.execute("PRAGMA main.table_info(runs)"))
    v1.execute(f"INSERT INTO main.runs ({cols}) SELECT {cols} FROM cur.runs")
    v1.commit()
    v1.close()

    url = f"sqlite:///{old}"
    with pytest.raises(StoreError, match="wayline db upgrade"):
        wayline.connect(url)
    store = wayline.connect(url, upgrade=True)
    assert store.schema_version() == SCHEMA_VERSION
    final = counter().compile(store).invoke(None, {"configurable": {"thread_id": "r"}})
    assert final == {"log": list(range(12)), "n": 12}


def test_a_store_opened_while_another_process_creates_it_is_not_refused_as_old(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two workers starting at once on a new schema: the first creates it while the second
    # opens it. The second once saw a version halfway (each migration committed on its own)
    # and refused the store as an old one to upgrade. Here the first pauses inside its
    # creation until the second has looked at the schema. (On SQLite an opener that may
    # create waits for the file's writer turn first, so it cannot look in the middle:
    # test_workers.py starts two worker processes on a new file.)
    import threading

    import wayline.store.sql_core as sql_core
    import wayline.store.sql_store as sql_store

    url = pg_url
    halfway, looked = threading.Event(), threading.Event()
    names: dict[int, str] = {}
    split, inspect = sql_core.split_statements, sql_store.SQLStore._inspect_schema
    applied = []

    def pausing_split(sql: str) -> list[str]:
        if names.get(threading.get_ident()) == "first":
            applied.append(sql)
            if len(applied) == 6:  # five migrations applied by the first opener
                halfway.set()
                assert looked.wait(30)
        return split(sql)

    def watched_inspect(store: sql_store.SQLStore) -> int:
        try:
            return inspect(store)
        finally:
            if names.get(threading.get_ident()) == "second":
                looked.set()

    monkeypatch.setattr(sql_core, "split_statements", pausing_split)
    monkeypatch.setattr(sql_store.SQLStore, "_inspect_schema", watched_inspect)
    opened: dict[str, Any] = {}

    def open_as(name: str) -> None:
        names[threading.get_ident()] = name
        try:
            opened[name] = wayline.connect(url)
        except Exception as exc:  # recorded for the assertion below
            opened[name] = exc

    first = threading.Thread(target=open_as, args=("first",))
    first.start()
    assert halfway.wait(30)
    second = threading.Thread(target=open_as, args=("second",))
    second.start()
    first.join(30)
    second.join(30)
    assert looked.is_set()
    for name in ("first", "second"):
        store = opened[name]
        assert not isinstance(store, Exception), f"{name}: {store}"
        assert store.schema_version() == SCHEMA_VERSION
        store.close()


# -- refusals: a store wayline must not use is refused clearly, and left as it was ----------


class Raw:
    """Plain SQL on a store's database, beside wayline (to damage or inspect it)."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite:///")
        self.path = Path(url.removeprefix("sqlite:///")) if self.sqlite else None

    def run(self, *statements: str) -> list[Any]:
        rows: list[Any] = []
        if self.path is not None:
            db = sqlite3.connect(self.path)
            for s in statements:
                rows = db.execute(s).fetchall()
            db.commit()
            db.close()
            return rows
        import psycopg

        base, _, schema = self.url.rpartition("schema=")
        with psycopg.connect(base.rstrip("?&"), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            conn.execute(f'SET search_path TO "{schema}"')
            for s in statements:
                cur = conn.execute(s)
                rows = cur.fetchall() if cur.description else []
        return rows

    def fingerprint(self) -> Any:
        """What a write would change: the file's bytes, or every table's rows."""
        if self.path is not None:
            assert not Path(f"{self.path}-wal").exists()
            return self.path.read_bytes()
        tables = [
            t
            for (t,) in self.run(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() ORDER BY table_name"
            )
        ]
        return {t: sorted(map(repr, self.run(f"SELECT * FROM {t}"))) for t in tables}


@pytest.fixture(params=["sqlite", "postgres"])
def raw(request: pytest.FixtureRequest, tmp_path: Path) -> Raw:
    if request.param == "sqlite":
        return Raw(f"sqlite:///{tmp_path / 'refused.db'}", tmp_path)
    return Raw(str(request.getfixturevalue("pg_url")), tmp_path)


def upgrade_cli(url: str) -> Any:
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "300"}
    cmd = [sys.executable, "-m", "wayline.cli.main", "db", "upgrade", "--db", url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def test_a_store_from_a_newer_wayline_is_refused_even_by_upgrade(raw: Raw) -> None:
    from wayline.errors import NewerSchemaError

    wayline.connect(raw.url).close()
    raw.run(f"UPDATE wayline_meta SET value = '{SCHEMA_VERSION + 1}'")
    before = raw.fingerprint()
    for upgrade in (False, True):
        with pytest.raises(NewerSchemaError, match="upgrade wayline"):
            wayline.connect(raw.url, upgrade=upgrade)
    cli = upgrade_cli(raw.url)
    assert cli.returncode != 0 and "up to date" not in cli.stdout
    assert f"version {SCHEMA_VERSION + 1}, newer than" in cli.stdout
    assert "Traceback" not in cli.stdout + cli.stderr
    assert raw.fingerprint() == before  # nothing written while refusing


def test_a_missing_schema_version_row_is_refused_not_rewritten(raw: Raw) -> None:
    from wayline.errors import NewerSchemaError, SchemaError

    wayline.connect(raw.url).close()
    raw.run("DELETE FROM wayline_meta WHERE key = 'schema_version'")
    before = raw.fingerprint()
    with pytest.raises(SchemaError, match="version row is missing") as refused:
        wayline.connect(raw.url)
    assert not isinstance(refused.value, NewerSchemaError)
    cli = upgrade_cli(raw.url)
    assert cli.returncode != 0 and "version row is missing" in cli.stdout
    assert raw.fingerprint() == before
    assert raw.run("SELECT value FROM wayline_meta") == []  # not rewritten to 1
    # Put back as the message says, the store opens and upgrades as before.
    raw.run(f"INSERT INTO wayline_meta VALUES ('schema_version', '{SCHEMA_VERSION}')")
    assert upgrade_cli(raw.url).returncode == 0
    assert wayline.connect(raw.url).schema_version() == SCHEMA_VERSION


def test_a_foreign_database_is_refused_clearly(raw: Raw) -> None:
    from wayline.errors import ForeignDatabaseError

    raw.run(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT)",
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)",
        "INSERT INTO customers VALUES (1, 'Ada')",
    )
    before = raw.fingerprint()
    for upgrade in (False, True):
        with pytest.raises(ForeignDatabaseError, match=r"not a wayline store.*customers, runs"):
            wayline.connect(raw.url, upgrade=upgrade)
    cli = upgrade_cli(raw.url)
    assert cli.returncode != 0 and "not a wayline store" in cli.stdout
    assert "no such column" not in cli.stdout + cli.stderr
    assert raw.fingerprint() == before


def test_a_snapshot_written_before_its_meter_moved_into_its_row_is_counted_once(
    tmp_path: Path,
) -> None:
    """Upgrading to 0012: a snapshot row written before has no ``sizes`` and its meter row
    in ``meter``. Rewritten at its step after the upgrade (a migration does), both writes
    are counted once each; a new snapshot counts from its own row."""
    path = tmp_path / "v11.db"
    db = sqlite3.connect(path)
    for version, _, sql in migrations("sqlite"):
        if version <= 11:
            for statement in split_statements(sql):
                db.execute(statement)
    db.execute("INSERT INTO wayline_meta VALUES ('schema_version', '11')")
    old = b"old-snap"
    check = checksum(("snapshots", "t", "r", 4), old)
    db.execute("INSERT INTO snapshots VALUES ('t', 'r', 4, ?, ?)", (old, check))
    db.execute(
        "INSERT INTO meter (tenant_id, run_id, step, tbl, channel, bytes) "
        "VALUES ('t', 'r', 4, 'snapshots', '', ?)",
        (len(old),),
    )
    db.commit()
    db.close()

    store = wayline.connect(f"sqlite:///{path}", upgrade=True)
    assert store.schema_version() == SCHEMA_VERSION
    store.create_run("t", "r", graph_name="g", graph_version="1", durability="sync")
    token = store.claim("t", "r", owner="w", lease_seconds=30)
    store.commit("t", "r", token, CommitBatch(snapshots=[SnapshotRecord(4, b"new")]))
    store.commit("t", "r", token, CommitBatch(snapshots=[SnapshotRecord(8, b"later")]))
    meter = [(m.step, m.bytes) for m in store.load_meter("t", "r") if m.table == "snapshots"]
    assert meter == [(4, len(old)), (4, 3), (8, 5)]
    rewritten = store.load_snapshot("t", "r", 4)
    assert rewritten is not None and rewritten.payload == b"new"
    store.close()
