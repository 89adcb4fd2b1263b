"""The store contract, checked on every store (``memory_fixtures.STORES``), sync and async.

LangGraph's ``InMemoryStore`` is one of the stores: each expectation below is what the
reference does too, so a behaviour wayline claims is LangGraph's. Where the stores may
differ by design (the order of a search without a query: insertion order in memory, most
recently updated first in SQL, as LangGraph's SQL stores), the test compares sets."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from memory_fixtures import STORES, Calls, make_store, ops_of


def test_put_get_round_trip(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    s.put(("users", "u1"), "prefs", {"food": "tea", "n": 3, "tags": ["a", "b"], "x": None})
    item = s.get(("users", "u1"), "prefs")
    assert item is not None
    assert item.namespace == ("users", "u1")
    assert item.key == "prefs"
    assert item.value == {"food": "tea", "n": 3, "tags": ["a", "b"], "x": None}
    assert isinstance(item.created_at, datetime.datetime) and item.created_at.tzinfo
    assert item.updated_at >= item.created_at
    assert item.dict()["namespace"] == ["users", "u1"]
    assert s.get(("users", "u1"), "other") is None
    assert s.get(("users", "u2"), "prefs") is None


def test_put_replaces_and_none_deletes(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    s.put(("docs",), "d", {"v": 1})
    s.put(("docs",), "d", {"v": 2})
    item = s.get(("docs",), "d")
    assert item is not None and item.value == {"v": 2}
    any_store.batch([_put(any_store, ("docs",), "d", None)])  # put(value=None) is a delete
    assert s.get(("docs",), "d") is None
    s.put(("docs",), "e", {"v": 1})
    s.delete(("docs",), "e")
    s.delete(("docs",), "never-there")  # deleting what is absent is not an error
    assert s.get(("docs",), "e") is None
    assert s.search(("docs",)) == []


@pytest.mark.parametrize(
    "namespace",
    [(), ("a.b",), ("langgraph", "x"), ("",), ("ok", 3), ("nul\x00",)],
    ids=["empty", "period", "langgraph-root", "empty-label", "not-a-string", "nul"],
)
def test_namespaces_lang_graph_refuses(any_store: Any, namespace: Any) -> None:
    with pytest.raises(ValueError) as caught:
        any_store.put(namespace, "k", {"v": 1})
    assert type(caught.value).__name__ == "InvalidNamespaceError"


def test_reads_check_labels_too(any_store: Any) -> None:
    with pytest.raises(ValueError):
        any_store.get(("a.b",), "k")
    with pytest.raises(ValueError):
        any_store.search(("a.b",))
    with pytest.raises(ValueError):
        any_store.list_namespaces(prefix=("a.b",))


def test_search_by_prefix_is_by_label(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    s.put(("u", "b"), "1", {"v": 1})
    s.put(("u", "b", "deep"), "2", {"v": 2})
    s.put(("u", "bc"), "3", {"v": 3})  # ("u", "b") is not a prefix of ("u", "bc")
    s.put(("v",), "4", {"v": 4})
    s.put(("u", "b-x"), "5", {"v": 5})  # sorts between "u.b" and "u.b.deep" as text
    assert _keys(s.search(("u", "b"))) == {"1", "2"}
    assert _keys(s.search(("u",))) == {"1", "2", "3", "5"}
    assert _keys(s.search(())) == {"1", "2", "3", "4", "5"}
    assert s.search(("w",)) == []
    found = s.search(("u", "b", "deep"))
    assert [(i.namespace, i.key, i.value, i.score) for i in found] == [
        (("u", "b", "deep"), "2", {"v": 2}, None)
    ]


def test_filters(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    rows = {
        "a": {"color": "red", "score": 1, "meta": {"lang": "en", "n": 1}},
        "b": {"color": "blue", "score": 5, "meta": {"lang": "fr", "n": 2}},
        "c": {"color": "red", "score": 9.5, "meta": {"lang": "en", "n": 3}},
    }
    for key, value in rows.items():
        s.put(("f",), key, value)
    cases: list[tuple[dict[str, Any], set[str]]] = [
        ({"color": "red"}, {"a", "c"}),
        ({"color": {"$eq": "blue"}}, {"b"}),
        ({"color": {"$ne": "red"}}, {"b"}),
        ({"score": {"$gt": 5}}, {"c"}),
        ({"score": {"$gte": 5}}, {"b", "c"}),
        ({"score": {"$lt": 5}}, {"a"}),
        ({"score": {"$lte": 5}}, {"a", "b"}),
        ({"score": {"$gt": 0, "$lt": 9}}, {"a", "b"}),
        ({"meta": {"lang": "en"}}, {"a", "c"}),
        ({"color": "red", "score": {"$gt": 2}}, {"c"}),
        ({"missing": "x"}, set()),
    ]
    for flt, expected in cases:
        assert _keys(s.search(("f",), filter=flt)) == expected, flt


def test_limit_and_offset_page_through(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    for i in range(7):
        s.put(("p",), f"k{i}", {"i": i})
    pages = [s.search(("p",), limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    seen = [i.key for p in pages for i in p]
    assert sorted(seen) == [f"k{i}" for i in range(7)]  # disjoint pages, all items
    assert len(s.search(("p",))) == 7  # default limit 10
    assert s.search(("p",), offset=7) == []
    assert _keys(s.search(("p",), filter={"i": {"$gte": 2}}, limit=2, offset=4)) <= {
        "k2",
        "k3",
        "k4",
        "k5",
        "k6",
    }
    assert len(s.search(("p",), filter={"i": {"$gte": 2}}, limit=2, offset=4)) == 1


def test_list_namespaces(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    for ns in [("a", "x", "1"), ("a", "x", "2"), ("a", "y"), ("b", "x", "1"), ("c",)]:
        s.put(ns, "k", {"v": 1})
    assert s.list_namespaces() == [
        ("a", "x", "1"),
        ("a", "x", "2"),
        ("a", "y"),
        ("b", "x", "1"),
        ("c",),
    ]
    assert s.list_namespaces(prefix=("a",)) == [("a", "x", "1"), ("a", "x", "2"), ("a", "y")]
    assert s.list_namespaces(prefix=("a", "x")) == [("a", "x", "1"), ("a", "x", "2")]
    assert s.list_namespaces(suffix=("1",)) == [("a", "x", "1"), ("b", "x", "1")]
    assert s.list_namespaces(prefix=("*", "x")) == [
        ("a", "x", "1"),
        ("a", "x", "2"),
        ("b", "x", "1"),
    ]
    assert s.list_namespaces(prefix=("a",), suffix=("2",)) == [("a", "x", "2")]
    assert s.list_namespaces(max_depth=1) == [("a",), ("b",), ("c",)]
    assert s.list_namespaces(max_depth=2, prefix=("a",)) == [("a", "x"), ("a", "y")]
    assert s.list_namespaces(limit=2) == [("a", "x", "1"), ("a", "x", "2")]
    assert s.list_namespaces(limit=2, offset=3) == [("b", "x", "1"), ("c",)]
    assert s.list_namespaces(prefix=("zz",)) == []
    s.delete(("c",), "k")  # a namespace without items is not listed...
    emptied_listed = ("c",) in s.list_namespaces()
    # ...except by the reference, which keeps the emptied namespace's dict (a deviation of
    # LangGraph's InMemoryStore from its SQL stores, listed in docs/memory.md)
    assert emptied_listed == (type(any_store).__module__ == "langgraph.store.memory")


def test_semantic_search_ranks_by_similarity(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    s.put(("m",), "tea", {"text": "tea tea tea", "kind": "drink"})
    s.put(("m",), "sun", {"text": "sun sun sun", "kind": "sky"})
    s.put(("m",), "rain", {"text": "rain on the plain", "kind": "sky"})
    s.put(("m",), "quiet", {"text": "tea", "kind": "drink"}, index=False)  # not embedded
    found = s.search(("m",), query="sun", limit=10)
    keys = [i.key for i in found]
    assert keys[0] == "sun" and keys[-1] == "quiet"
    assert found[0].score == pytest.approx(1.0)
    assert found[-1].score is None
    assert all(i.score is not None for i in found[:-1])
    scores = [i.score for i in found[:-1]]
    assert scores == sorted(scores, reverse=True)
    assert [i.key for i in s.search(("m",), query="tea", limit=1)] == ["tea"]
    assert [i.key for i in s.search(("m",), query="sun", limit=2, offset=1)] == keys[1:3]
    sky = s.search(("m",), query="sun", filter={"kind": "sky"})
    assert [i.key for i in sky] == ["sun", "rain"]


def test_put_index_names_its_own_fields(any_store: Any, mode: str) -> None:
    s = Calls(any_store, mode)
    s.put(("i",), "a", {"text": "zzz", "title": "sun sun"}, index=["title"])
    s.put(("i",), "b", {"text": "sun sun", "title": "zzz"})
    found = s.search(("i",), query="sun")
    assert {i.key for i in found} == {"a", "b"}
    assert all(i.score == pytest.approx(1.0) for i in found)
    s.put(("i",), "c", {"text": "x", "parts": [{"t": "rain"}, {"t": "sun"}]}, index=["parts[*].t"])
    best = s.search(("i",), query="rain", limit=1)
    assert best[0].key == "c"  # one of its two embedded texts is an exact match


@pytest.mark.parametrize("kind", STORES)
def test_search_without_index_has_no_scores(
    kind: str, request: pytest.FixtureRequest, mode: str
) -> None:
    s = Calls(make_store(kind, request), mode)
    s.put(("n",), "a", {"text": "sun"})
    found = s.search(("n",), query="sun")
    assert [(i.key, i.score) for i in found] == [("a", None)]


def test_batch_answers_each_op_in_order(any_store: Any) -> None:
    G, L, P, S = ops_of(any_store)
    any_store.batch([P(("b",), "1", {"v": 1}), P(("b",), "2", {"v": 2})])
    results = any_store.batch(
        [G(("b",), "1"), S(("b",), filter={"v": 2}), L(), P(("b",), "3", {"v": 3}), G(("b",), "9")]
    )
    assert len(results) == 5
    assert results[0].value == {"v": 1}
    assert [i.key for i in results[1]] == ["2"]
    assert results[2] == [("b",)]
    assert results[3] is None and results[4] is None
    assert any_store.get(("b",), "3").value == {"v": 3}


def _put(store: Any, namespace: tuple[str, ...], key: str, value: Any) -> Any:
    return ops_of(store)[2](namespace, key, value)


def _keys(items: list[Any]) -> set[str]:
    return {i.key for i in items}
