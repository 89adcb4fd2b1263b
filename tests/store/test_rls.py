"""PostgreSQL row-level security, seen from a role without BYPASSRLS: a store scoped to one
tenant can neither read nor write another tenant's rows, even with its run ids in hand."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

import wayline
from wayline.demo.refund_agent import build_refund_agent, claim_input


def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    return {"id": f"re-{key}"}


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.split("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


@pytest.fixture
def rls_urls(pg_base_url: str) -> tuple[str, str, str, str]:
    """(owner URL, app store URL, app libpq URL, schema): a fresh schema with RLS enabled
    and an app role without BYPASSRLS."""
    schema = f"t_rls_{uuid.uuid4().hex[:8]}"
    role = f"app_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in pg_base_url else "?"
    owner_url = f"{pg_base_url}{sep}schema={schema}"
    owner = wayline.connect(owner_url)
    assert owner.enable_rls()  # type: ignore[attr-defined]
    owner.close()
    with psycopg.connect(pg_base_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN NOBYPASSRLS")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}"
        )
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
    app_libpq = as_role(pg_base_url, role)
    return owner_url, f"{app_libpq}{sep}schema={schema}&rls=1", app_libpq, schema


def test_a_tenant_scoped_role_sees_and_writes_only_its_tenant(
    rls_urls: tuple[str, str, str, str],
) -> None:
    owner_url, app_url, app_libpq, schema = rls_urls
    store = wayline.connect(app_url)
    app = build_refund_agent(store, refund)
    for tenant in ("acme", "globex"):
        app.invoke(claim_input(), {"configurable": {"thread_id": "claim-9", "tenant": tenant}})
    assert [r.run_id for r in store.list_runs("acme")] == ["claim-9"]

    # Every statement is scoped: no row of another tenant is visible, even by its id.
    with psycopg.connect(app_libpq, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        assert conn.execute("SELECT count(*) FROM deltas").fetchone() == (0,)  # no tenant set
        with conn.transaction():
            conn.execute("SELECT set_config('wayline.tenant', 'acme', true)")
            tenants = conn.execute("SELECT DISTINCT tenant_id FROM deltas").fetchall()
            assert tenants == [("acme",)]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # WITH CHECK
                conn.execute(
                    "INSERT INTO audit (tenant_id, run_id, at, actor, action, outcome) "
                    "VALUES ('globex', 'claim-9', 0, 'mallory', 'decide', 'accepted')"
                )

    # A store pinned to acme: whatever tenant a call names, the database answers as acme.
    pinned = wayline.connect(f"{app_url}&tenant=acme")
    assert pinned.get_run("globex", "claim-9") is None
    assert pinned.list_runs("globex") == []
    assert pinned.load_deltas("globex", "claim-9", -1, 100) == []
    assert pinned.get_run("acme", "claim-9") is not None
    pinned.close()

    # The owner (bypassing RLS) sees both tenants' rows: the policy, not the data, did it.
    owner = wayline.connect(owner_url)
    assert owner.get_run("globex", "claim-9") is not None
    owner.close()
    store.close()


def test_a_commit_of_many_rows_is_scoped_too(rls_urls: tuple[str, str, str, str]) -> None:
    """An exit-mode run commits all its steps at once (several deltas and meter rows in one
    statement each): under row-level security that goes through the tenant's policy too."""
    _, app_url, _, _ = rls_urls
    store = wayline.connect(app_url)
    app = build_refund_agent(store, refund)
    cfg = {"configurable": {"thread_id": "claim-exit", "tenant": "acme"}}
    app.invoke(claim_input(), cfg, durability="exit")
    run = store.get_run("acme", "claim-exit")
    assert run is not None and run.step >= 2
    deltas = store.load_deltas("acme", "claim-exit", -1, run.step)
    assert [d.step for d in deltas] == list(range(run.step + 1))
    assert {m.table for m in store.load_meter("acme", "claim-exit")} >= {"deltas"}
    assert store.get_run("globex", "claim-exit") is None
    store.close()


def test_the_servers_tables_are_scoped_and_a_key_is_still_found(
    rls_urls: tuple[str, str, str, str],
) -> None:
    """threads, thread_runs, api_keys and metric_samples answer only for the transaction's
    tenant; the one lookup a request makes before its tenant is known (its key, by id) still
    works."""
    from wayline.control.keys import authenticate, create_key
    from wayline.store.metric_samples import SampleRow, metric_samples
    from wayline.store.server_tables import ThreadRunRecord, server_tables

    _, app_url, app_libpq, schema = rls_urls
    store = wayline.connect(app_url)
    tables = server_tables(store)
    keys = {t: create_key(tables, tenant=t, actor=f"{t}-bot")[0] for t in ("acme", "globex")}
    for tenant in ("acme", "globex"):
        assert tables.insert_thread(tenant, "th-1", {"owner": tenant})
        tables.insert_run(
            ThreadRunRecord(
                tenant_id=tenant,
                run_id=f"{tenant}-r",
                thread_id="th-1",
                assistant_id="a",
                status="pending",
                start_step=0,
                metadata={},
                kwargs={},
                created_at=1.0,
                updated_at=1.0,
            )
        )
    assert authenticate(tables, keys["globex"]).tenant == "globex"  # found by id, any tenant
    samples = metric_samples(store)  # a worker's metrics: a transaction per tenant
    samples.put("w1", [SampleRow(t, "wayline.run.steps", (), 1, 1, 3.0, (0, 1)) for t in keys])
    assert [r.tenant_id for r in samples.load("acme", 0)] == ["acme"]

    with psycopg.connect(app_libpq, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        for table in ("threads", "thread_runs", "api_keys", "metric_samples"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
        with conn.transaction():
            conn.execute("SELECT set_config('wayline.tenant', 'acme', true)")
            for table in ("threads", "thread_runs", "api_keys", "metric_samples"):
                seen = conn.execute(f"SELECT DISTINCT tenant_id FROM {table}").fetchall()
                assert seen == [("acme",)], table
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # WITH CHECK
                conn.execute(
                    "INSERT INTO threads (tenant_id, thread_id, metadata, created_at, "
                    "updated_at) VALUES ('globex', 'th-2', '{}', 0, 0)"
                )
    store.close()
