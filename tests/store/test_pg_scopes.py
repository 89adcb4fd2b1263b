"""PostgreSQL roles matching the scopes, under row-level security: a ``read`` role reads
its tenant's runs and cannot start, claim, resume or erase; an ``execute`` role runs and
resumes but cannot purge, redact or destroy a subject key; ``admin`` can."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

import wayline
from wayline.control import Actor
from wayline.demo.refund_agent import build_refund_agent, claim_input
from wayline.errors import StoreError


def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    return {"id": f"re-{key}"}


def as_role(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.split("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


def test_roles_with_scopes_under_row_level_security(pg_base_url: str) -> None:
    schema = f"t_scope_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in pg_base_url else "?"
    owner = wayline.connect(f"{pg_base_url}{sep}schema={schema}")
    owner.enable_rls()  # type: ignore[attr-defined]
    urls = {}
    with psycopg.connect(pg_base_url, autocommit=True) as conn:
        for scope in ("read", "execute", "admin"):
            role = f"{scope}_{uuid.uuid4().hex[:8]}"
            conn.execute(f"CREATE ROLE {role} LOGIN NOBYPASSRLS")
            owner.grant_scope(role, scope)  # type: ignore[attr-defined]
            urls[scope] = f"{as_role(pg_base_url, role)}{sep}schema={schema}&rls=1&tenant=acme"
    owner.close()
    cfg = {"configurable": {"thread_id": "c9", "tenant": "acme", "subject": "dana"}}

    executor = wayline.connect(urls["execute"])
    app = build_refund_agent(executor, refund)
    (question,) = app.invoke(claim_input(), cfg)["__interrupt__"]

    reader = wayline.connect(urls["read"], create=False)
    assert reader.get_run("acme", "c9") is not None and reader.load_deltas("acme", "c9", -1, 9)
    read_client = wayline.Wayline(reader, tenant="acme")  # its own scope says admin:
    finance = Actor(id="fatima", roles=("finance",), tenant="acme")
    with pytest.raises(StoreError, match="permission denied"):  # the database refuses
        read_client.resume("c9", {"approved": True}, actor=finance, digest=question.digest)
    with pytest.raises(StoreError, match="permission denied"):
        read_client.start(build_refund_agent(reader, refund), claim_input(), run_id="c10")
    with pytest.raises(StoreError, match="permission denied"):
        reader.claim("acme", "c9", owner="r", lease_seconds=5)
    with pytest.raises(StoreError, match="permission denied"):
        read_client.purge("c9")

    exec_client = wayline.Wayline(executor, tenant="acme")
    exec_client.resume("c9", {"approved": True}, actor=finance, digest=question.digest)
    app.invoke(None, cfg)
    assert exec_client.get("c9").status == "done"
    with pytest.raises(StoreError, match="permission denied"):
        exec_client.purge("c9")
    with pytest.raises(StoreError, match="permission denied"):
        exec_client.erase_subject("dana")
    with pytest.raises(StoreError, match="permission denied"):
        executor.destroy_subject_keys("acme", "dana")

    admin = wayline.Wayline(wayline.connect(urls["admin"]), tenant="acme")
    assert admin.erase_subject("dana")["runs"] == ["c9"]
    assert admin.store.get_run("acme", "c9") is None
    for store in (reader, executor, admin.store):
        store.close()
