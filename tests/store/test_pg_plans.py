"""On PostgreSQL every lookup of a run row by its key is an index scan of the primary key,
whatever the statistics say (issue 31): on a young table that ANALYZE saw empty (a tenant
it never saw looks rare, and any index led by ``tenant_id`` seemed as good as the key: the
fences ran on ``runs_by_subject`` with the tenant as their only index condition), and on
one analyzed small (a sequential scan of a few pages looked cheaper: the group statement's
fenced update read every run of the table, a step of each). Checked by the plans
PostgreSQL makes for the statements the store sends, on its own connections: a custom plan
(the first executions of a prepared statement) and the generic one (those after)."""

from __future__ import annotations

import re
import time
from typing import Any

import psycopg

import wayline
from wayline.store import sql_rewrite
from wayline.store.pg_statements import Q_STEP_ONE_TRIP, group_one_trip, numbered
from wayline.store.postgres import PostgresStore
from wayline.store.sql import assistant_queries, schedule_queries, server_queries

T = "acme"
_KEYED = re.compile(r"\b(FROM|UPDATE) runs\b[^;]*?WHERE tenant_id = %s AND run_id = %s", re.S)


def _keyed_statements(store: PostgresStore) -> dict[str, str]:
    """Every named statement that finds a run row by its key (the store's, the server's,
    the schedules', the erasure's), and the one-trip commits."""
    named = {**vars(store.q)}
    for module in (server_queries, schedule_queries, assistant_queries, sql_rewrite):
        named.update(
            (f"{module.__name__.rsplit('.', 1)[1]}.{k}", v.replace("?", "%s"))
            for k, v in vars(module).items()
            if k.startswith("Q_") and isinstance(v, str)
        )
    found = {
        name: text
        for name, text in named.items()
        if isinstance(text, str) and "{" not in text and _KEYED.search(text)
    }
    found.update(Q_STEP_ONE_TRIP=Q_STEP_ONE_TRIP, group_one_trip=group_one_trip(3))
    return found


def _scans_of_runs(conn: psycopg.Connection[Any], query: str, params: Any = None) -> set[str]:
    if params is None:  # the generic plan: parameters as $n, planned without their values
        numbers = iter(range(1, 1000))
        text = re.sub(r"%[sb]", lambda _: f"${next(numbers)}", query)
        explained = "EXPLAIN (GENERIC_PLAN, COSTS OFF) " + text
        rows = psycopg.ClientCursor(conn).execute(explained).fetchall()
    else:
        rows = conn.execute("EXPLAIN (COSTS OFF) " + query, params).fetchall()
    plan = "\n".join(row[0] for row in rows)
    return set(re.findall(r"(?:Seq Scan|Index Scan using \w+|Bitmap Heap Scan) on runs", plan))


def _check(store: PostgresStore, run_id: str, token: int) -> dict[str, set[str]]:
    """Each keyed statement's scans of ``runs`` that are not the primary key's."""
    q, now = store.q, time.time()
    custom = {  # the fences a worker sends every step, with real values
        "Q_FENCE_STEP": (1, "[]", None, None, now, 0, T, run_id, token, "running"),
        "Q_FENCE_UPDATE": ("done", 1, "[]", None, None, now, 0, "done", "done", T, run_id, token),
        "Q_FENCE_TOUCH": (now, 0, T, run_id, token),
        "Q_HEARTBEAT": (now, T, run_id, token, "w"),
    }
    wrong: dict[str, set[str]] = {}
    pool: Any = store._pool
    with pool.connection() as conn:  # the store's session: its settings apply
        for name, query in _keyed_statements(store).items():
            plans = [_scans_of_runs(conn, query)]
            if name in custom:
                plans.append(_scans_of_runs(conn, getattr(q, name), custom[name]))
            for scans in plans:
                if scans != {"Index Scan using runs_pkey on runs"}:
                    wrong.setdefault(name, set()).update(scans)
    return wrong


def test_every_keyed_lookup_of_a_run_is_a_primary_key_scan_whatever_the_statistics(
    pg_url: str,
) -> None:
    store = wayline.connect(pg_url)
    assert isinstance(store, PostgresStore)
    pool: Any = store._pool
    try:
        keyed = set(_keyed_statements(store))  # the scan finds the fences
        assert {"Q_FENCE_STEP", "Q_HEARTBEAT", "Q_CLAIM_TAKE", "sql_rewrite.Q_LEASE"} <= keyed
        with pool.connection() as conn:
            conn.execute("ANALYZE runs")  # a young table: analyzed empty
        tokens = {}
        for i in range(40):
            run_id = f"{i:04d}-8f0c2a5e-3b1d-4e7a-9c6b-{i:012d}"
            store.create_run(T, run_id, graph_name="g", graph_version="1", durability="sync")
            tokens[run_id] = store.claim(T, run_id, owner="w", lease_seconds=60)
        run_id = sorted(tokens)[7]
        assert _check(store, run_id, tokens[run_id]) == {}
        with pool.connection() as conn:
            conn.execute("ANALYZE runs")  # and analyzed small: a page or two
        assert _check(store, run_id, tokens[run_id]) == {}
    finally:
        store.close()


def test_the_group_statement_updates_its_runs_in_one_update_whatever_their_number(
    pg_url: str,
) -> None:
    """PostgreSQL sets up each UPDATE of a statement at every execution: the group commit
    of 8 runs is one UPDATE of ``runs`` (a primary-key lookup a run), not eight."""
    store = wayline.connect(pg_url)
    assert isinstance(store, PostgresStore)
    pool: Any = store._pool
    try:
        with pool.connection() as conn:
            for n in (2, 8):
                explained = f"EXPLAIN (GENERIC_PLAN, COSTS OFF) {numbered(group_one_trip(n))}"
                plan = [row[0] for row in psycopg.ClientCursor(conn).execute(explained)]
                assert sum("Update on runs" in line for line in plan) == 1, plan
                scans = re.findall(
                    r"(?:Seq Scan|Index Scan using \w+|Bitmap Heap Scan) on runs", "\n".join(plan)
                )
                assert scans == ["Index Scan using runs_pkey on runs"], plan
    finally:
        store.close()


def _effect_scans(conn: psycopg.Connection[Any], query: str, params: Any = None) -> set[str]:
    if params is None:
        numbers = iter(range(1, 1000))
        text = re.sub(r"%[sb]", lambda _: f"${next(numbers)}", query)
        explained = "EXPLAIN (GENERIC_PLAN, COSTS OFF) " + text
        rows = psycopg.ClientCursor(conn).execute(explained).fetchall()
    else:
        rows = conn.execute("EXPLAIN (COSTS OFF) " + query, params).fetchall()
    plan = "\n".join(row[0] for row in rows)
    return set(re.findall(r"(?:Seq Scan|Index Scan using \w+|Bitmap Heap Scan) on effects", plan))


def test_an_effect_found_by_its_key_is_a_primary_key_scan_whatever_the_statistics(
    pg_url: str,
) -> None:
    """Issue 31: ``effects_by_run`` led with the tenant, and on a table analyzed empty the
    lookups by key ran on it with the tenant as their only index condition."""
    from wayline.store.records import EffectRecord

    store = wayline.connect(pg_url)
    assert isinstance(store, PostgresStore)
    pool: Any = store._pool
    q = store.q
    pk, by_run = (
        {"Index Scan using effects_pkey on effects"},
        {"Index Scan using effects_by_run on effects"},
    )
    keyed = {
        "Q_GET_EFFECT": (q.Q_GET_EFFECT, (T, "k5")),
        "Q_UPDATE_EFFECT": (
            q.Q_UPDATE_EFFECT,
            (2, "SUCCEEDED", 1, None, None, time.time(), None, T, "k5", "EXECUTING"),
        ),
        "sql_rewrite.Q_SET_EFFECT": (
            sql_rewrite.Q_SET_EFFECT.replace("?", "%s"),
            (None, None, T, "k5"),
        ),
    }
    of_a_run = {  # a run's effects: the index that serves them is still used
        "Q_LIST_EFFECTS": (q.Q_LIST_EFFECTS, (T, "r1")),
        "sql_rewrite.Q_EFFECTS": (sql_rewrite.Q_EFFECTS.replace("?", "%s"), (T, "r1")),
    }

    def wrong() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        with pool.connection() as conn:
            for named, want in ((keyed, pk), (of_a_run, by_run)):
                for name, (query, params) in named.items():
                    for scans in (_effect_scans(conn, query), _effect_scans(conn, query, params)):
                        if scans != want:
                            found.setdefault(name, set()).update(scans)
        return found

    try:
        with pool.connection() as conn:
            conn.execute("ANALYZE effects")  # a young table: analyzed empty
        assert wrong() == {}
        for r in range(5):
            run_id = f"r{r}"
            store.create_run(T, run_id, graph_name="g", graph_version="1", durability="sync")
            token = store.claim(T, run_id, owner="w", lease_seconds=60)
            assert token is not None
            for i in range(r, 40, 5):
                record = EffectRecord(
                    tenant_id=T, key=f"k{i}", run_id=run_id, kind="effect", node="n", step=1,
                    name="charge", seq=i, attempt=1, request_digest="d", status="EXECUTING",
                    fencing_token=token,
                )  # fmt: skip
                assert store.put_effect(run_id, token, record, expect=None)
        with pool.connection() as conn:
            conn.execute("ANALYZE effects")  # and analyzed small
        assert wrong() == {}
        assert store.get_effect(T, "k5") is not None
    finally:
        store.close()
