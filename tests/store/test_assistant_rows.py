"""The assistants tables (``wayline serve``'s assistants made over the API) on SQLite and
PostgreSQL: created at version 1, each change a new version the assistant points at, an
older version made current again, deleted with every version; tenant-scoped, and under
PostgreSQL row-level security a store pinned to one tenant sees none of another's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_rls import rls_urls  # noqa: F401 - the fixture

import wayline
from wayline.store.assistant_tables import AssistantRecord, AssistantTables


@pytest.fixture(params=["sqlite-file", "postgres"])
def tables(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AssistantTables]:
    if request.param == "sqlite-file":
        url = f"sqlite:///{tmp_path / 'assistants.db'}"
    else:
        url = str(request.getfixturevalue("pg_url"))
    store = wayline.connect(url)
    yield AssistantTables(store)  # type: ignore[arg-type]
    store.close()


def record(tenant: str, aid: str, **changes: object) -> AssistantRecord:
    now = time.time()
    base = dict(
        tenant_id=tenant, assistant_id=aid, version=1, graph_id="g", name="n",
        description=None, config={"recursion_limit": 5}, context={"model": "small"},
        metadata={"team": "a"}, created_at=now, updated_at=now,
    )  # fmt: skip
    base.update(changes)
    return AssistantRecord(**base)  # type: ignore[arg-type]


def test_versions_and_the_one_in_use(tables: AssistantTables) -> None:
    assert tables.create(record("t1", "a1"))
    assert not tables.create(record("t1", "a1"))  # the id is taken
    got = tables.get("t1", "a1")
    assert got is not None and (got.version, got.context) == (1, {"model": "small"})
    assert tables.add_version(record("t1", "a1", context={"model": "large"})) == 2
    now = tables.get("t1", "a1")
    assert now is not None and (now.version, now.context) == (2, {"model": "large"})
    assert [v.version for v in tables.versions("t1", "a1")] == [2, 1]
    assert tables.set_version("t1", "a1", 1)
    back = tables.get("t1", "a1")
    assert back is not None and back.context == {"model": "small"}
    assert not tables.set_version("t1", "a1", 7)
    assert tables.get("t2", "a1") is None and tables.all("t2") == []  # another tenant's
    assert [a.assistant_id for a in tables.all("t1")] == ["a1"]
    assert tables.delete("t1", "a1")
    assert tables.get("t1", "a1") is None and tables.versions("t1", "a1") == []


def test_row_level_security_hides_another_tenants_assistants(
    rls_urls: tuple[str, str, str, str],  # noqa: F811
) -> None:
    _, app_url, _, _ = rls_urls
    store = wayline.connect(app_url)
    AssistantTables(store).create(record("globex", "secret"))  # type: ignore[arg-type]
    pinned = wayline.connect(f"{app_url}&tenant=acme")
    mine = AssistantTables(pinned)  # type: ignore[arg-type]
    assert mine.get("globex", "secret") is None
    assert mine.all("globex") == [] and mine.versions("globex", "secret") == []
    assert AssistantTables(store).get("globex", "secret") is not None  # type: ignore[arg-type]
    pinned.close()
    store.close()
