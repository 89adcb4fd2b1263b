"""``WaylineStore``, LangGraph's ``BaseStore`` on wayline's memory, beyond the contract suite
(``tests/memory``, which runs on it too), on SQLite and PostgreSQL: a run's writes are fenced
by its lease; TTL through LangGraph's API; ``langgraph.json``'s ``store`` (index and TTL)
read, checked and given to the LangGraph graphs a worker runs; a graph compiled with a store
of its own keeps it."""

from __future__ import annotations

import json
import operator
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore

import wayline
from wayline.cli.app_config import read_app_config
from wayline.cli.loading import load_engine
from wayline.cli.serve import _served
from wayline.client import Wayline
from wayline.errors import ConfigError, LeaseLost
from wayline.langgraph.engine import LangGraphEngine
from wayline.langgraph.store import WaylineStore
from wayline.memory import DurableStore
from wayline.store.base import Store
from wayline.worker import Worker, WorkerConfig

EMBED = """
LETTERS = "aeiourstnl"


def embed(texts):
    return [[float(str(t).lower().count(c)) for c in LETTERS] for t in texts]
"""


NOTES = """
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict


class Notes(TypedDict, total=False):
    said: list


def note(state: Notes, runtime: Runtime) -> dict:
    runtime.store.put(("notes",), "n1", {"text": "rain on the plain"})
    return {"said": ["noted"]}


g = StateGraph(Notes)
g.add_node("note", note)
g.add_edge(START, "note")
g.add_edge("note", END)
graph = g.compile()
"""


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'lgstore.db'}"
    else:
        url = str(request.getfixturevalue("pg_url"))
    store = wayline.connect(url)
    yield store
    store.close()


class Notes(TypedDict, total=False):
    said: Annotated[list[str], operator.add]


def _note(state: Notes, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None
    runtime.store.put(("notes",), "n1", {"text": "rain on the plain"})
    return {"said": [f"{len(runtime.store.search(('notes',)))} notes"]}


def notes_graph(store: Any = None) -> Any:
    g = StateGraph(Notes)
    g.add_node("note", _note)
    g.add_edge(START, "note")
    g.add_edge("note", END)
    return g.compile(name="lg_notes", store=store)


def run_on_worker(backend: Store, engine: Any, run_id: str, tenant: str) -> None:
    worker = Worker(backend, engine, WorkerConfig(poll_interval=0.02, lease_seconds=5))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        client = Wayline(backend)
        client.start(engine, {"said": []}, run_id=run_id, tenant=tenant)
        assert client.wait(run_id, tenant=tenant, timeout=30).status == "done"
    finally:
        worker.stop()
        thread.join()


def test_a_runs_writes_are_fenced_by_its_lease(backend: Store) -> None:
    tenant, run_id = f"t-{uuid.uuid4().hex[:8]}", "fenced"
    Wayline(backend).start(notes_graph(), {"said": []}, run_id=run_id, tenant=tenant)
    first = backend.claim(tenant, run_id, owner="w1", lease_seconds=30)
    mine = WaylineStore().for_run(backend, tenant, run_id, first)
    mine.put(("facts",), "city", {"city": "Lyon"})
    item = mine.get(("facts",), "city")
    assert isinstance(item, Item) and item.value == {"city": "Lyon"}  # LangGraph's Item
    row = DurableStore(backend, tenant=tenant).record(("facts",), "city")
    assert row is not None and row.run_id == run_id
    backend.release(tenant, run_id, first)
    second = backend.claim(tenant, run_id, owner="w2", lease_seconds=30)
    assert second > first
    with pytest.raises(LeaseLost):  # a worker that lost the run writes nothing
        mine.put(("facts",), "city", {"city": "Paris"})
    with pytest.raises(LeaseLost):
        mine.delete(("facts",), "city")
    theirs = WaylineStore().for_run(backend, tenant, run_id, second)
    item = theirs.get(("facts",), "city")
    assert item is not None and item.value == {"city": "Lyon"}
    assert WaylineStore(backend, tenant="other").get(("facts",), "city") is None


def test_ttl_through_langgraphs_api(backend: Store) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    store = WaylineStore(backend, tenant=tenant, ttl={"default_ttl": 5, "refresh_on_read": False})
    assert store.supports_ttl
    store.put(("d",), "default", {"v": 1})
    store.put(("d",), "brief", {"v": 2}, ttl=1e-7)  # 6 microseconds: expired once read
    store.put(("d",), "forever", {"v": 3}, ttl=None)
    durable = DurableStore(backend, tenant=tenant)
    default = durable.record(("d",), "default")
    assert default is not None and default.ttl_minutes == 5
    assert store.get(("d",), "brief") is None
    assert sorted(i.key for i in store.search(("d",))) == ["default", "forever"]
    forever = durable.record(("d",), "forever")
    assert forever is not None and forever.expires_at is None


def test_langgraph_json_store_reaches_the_graphs_a_worker_runs(
    backend: Store, tmp_path: Path
) -> None:
    (tmp_path / "embed.py").write_text(EMBED)
    config = {
        "graphs": {"notes": "./notes.py:graph"},
        "store": {
            "index": {"embed": "./embed.py:embed", "dims": 10, "fields": ["text"]},
            "ttl": {"default_ttl": 60, "refresh_on_read": True},
        },
    }
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    app = read_app_config(tmp_path / "langgraph.json")
    assert "store" not in app.not_applied
    memory = app.memory()
    assert isinstance(memory, WaylineStore)
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    (tmp_path / "notes.py").write_text(NOTES)
    spec = app.graphs["notes"]
    engine = _served(load_engine(spec, backend), "notes", backend, memory)  # as serve does
    assert engine.memory_store.index_config["dims"] == 10  # what /store searches with
    run_on_worker(backend, engine, "noted", tenant)
    found = WaylineStore.over(memory.durable.bound(backend, tenant)).search(
        ("notes",), query="the plain rain on", limit=1
    )
    assert [(i.key, i.value) for i in found] == [("n1", {"text": "rain on the plain"})]
    assert found[0].score == pytest.approx(1.0)  # embedded with the app's function
    row = DurableStore(backend, tenant=tenant).record(("notes",), "n1")
    assert row is not None and (row.run_id, row.node, row.ttl_minutes) == ("noted", "note", 60)


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ({"index": {"embed": "./embed.py:embed"}}, "dims"),
        ({"index": {"dims": 3}}, "embed"),
        ({"index": {"dims": 3, "embed": "x:y", "fields": "text"}}, "fields"),
        ({"indexes": {}}, '"index" and/or "ttl"'),
        ({"ttl": {"forever": True}}, "store.ttl"),
    ],
)
def test_a_store_langgraph_json_cannot_use_is_refused(
    tmp_path: Path, store: Any, says: str
) -> None:
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"g": "m:g"}, "store": store}))
    with pytest.raises(ConfigError, match=says):
        read_app_config(tmp_path / "langgraph.json")


def test_an_embed_that_names_nothing_is_refused(tmp_path: Path) -> None:
    (tmp_path / "embed.py").write_text(EMBED)
    given = {"index": {"embed": "./embed.py:missing", "dims": 10}}
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"g": "m:g"}, "store": given}))
    with pytest.raises(ConfigError, match="'missing' is not an Embeddings"):
        read_app_config(tmp_path / "langgraph.json").memory()


def test_a_graph_compiled_with_its_own_store_keeps_it(backend: Store) -> None:
    own = InMemoryStore()
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    run_on_worker(backend, LangGraphEngine(notes_graph(own)).bind(backend), "own", tenant)
    item = own.get(("notes",), "n1")
    assert item is not None and item.value == {"text": "rain on the plain"}
    assert DurableStore(backend, tenant=tenant).get(("notes",), "n1") is None


def test_it_is_langgraphs_base_store() -> None:
    assert issubclass(WaylineStore, BaseStore)
