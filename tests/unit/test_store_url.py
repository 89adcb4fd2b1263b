"""wayline.connect: the URL forms it accepts and the typed error for everything else."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

import wayline
from wayline import START, StateGraph
from wayline.errors import StoreError, StoreURLError, WaylineError
from wayline.store import SQLiteStore, Store


def test_connect_is_open_store() -> None:
    assert wayline.connect is wayline.open_store


def test_memory_url() -> None:
    store = wayline.connect("sqlite:///:memory:")
    try:
        assert isinstance(store, SQLiteStore)
        assert isinstance(store, Store)
        assert store.url == "sqlite:///:memory:"
    finally:
        store.close()


def test_relative_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = wayline.connect("sqlite:///runs.db")
    store.close()
    assert (tmp_path / "runs.db").is_file()


def test_absolute_path_takes_four_slashes(tmp_path: Path) -> None:
    path = tmp_path / "abs.db"
    url = f"sqlite:///{path}"
    assert url.startswith("sqlite:////")
    store = wayline.connect(url)
    try:
        assert path.is_file()
        assert store.url == url  # the store's URL opens the same database
    finally:
        store.close()


@pytest.mark.parametrize("level", ["NORMAL", "normal", "OFF", "FULL", "EXTRA"])
def test_synchronous_option(tmp_path: Path, level: str) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'x.db'}?synchronous={level}")
    try:
        assert isinstance(store, SQLiteStore)
        assert store.synchronous == level.upper()
        reopened = wayline.connect(store.url)
        assert isinstance(reopened, SQLiteStore) and reopened.synchronous == level.upper()
        reopened.close()
    finally:
        store.close()


def test_scheme_is_case_insensitive() -> None:
    wayline.connect("SQLite:///:memory:").close()


class State(TypedDict):
    log: Annotated[list[Any], operator.add]


def test_runs_persist_across_connections_to_the_same_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    def build(store: Store) -> wayline.CompiledGraph:
        g = StateGraph(State)
        g.add_node("a", lambda s: {"log": ["a"]})
        g.add_edge(START, "a")
        return g.compile(store)

    first = wayline.connect(url)
    build(first).invoke({"log": []}, {"configurable": {"thread_id": "r1"}})
    first.close()
    second = wayline.connect(url)
    try:
        run = second.get_run("default", "r1")
        assert run is not None and run.status == "done"
        assert build(second).get_state({"configurable": {"thread_id": "r1"}}).values == {
            "log": ["a"]
        }
    finally:
        second.close()


@pytest.mark.parametrize(
    "url",
    [
        "nope",
        "runs.db",
        "sqlite:",
        "sqlite://",
        "sqlite:///",
        "sqlite://host/runs.db",
        "mysql://user@host/db",
        "sqlite:///runs.db?journal=wal",
        "sqlite:///runs.db?synchronous=sometimes",
    ],
)
def test_bad_urls_raise_store_url_error(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreURLError):
        wayline.connect(url)
    assert list(tmp_path.iterdir()) == []  # a refused URL creates no file


@pytest.mark.parametrize("value", [None, 42, Path("runs.db")])
def test_non_string_urls_raise_store_url_error(value: object) -> None:
    with pytest.raises(StoreURLError):
        wayline.connect(value)  # type: ignore[arg-type]


def test_unopenable_paths_raise_store_url_error(tmp_path: Path) -> None:
    missing_dir = tmp_path / "no" / "such" / "dir" / "runs.db"
    with pytest.raises(StoreURLError, match="cannot open"):
        wayline.connect(f"sqlite:///{missing_dir}")
    with pytest.raises(StoreURLError):
        wayline.connect(f"sqlite:///{tmp_path}")  # a directory
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("this is not a database, " * 100)
    with pytest.raises(StoreURLError):
        wayline.connect(f"sqlite:///{not_a_db}")


def test_store_url_error_hierarchy() -> None:
    assert issubclass(StoreURLError, StoreError)
    assert issubclass(StoreError, WaylineError)
