"""Run ids by prefix (``Store.run_ids_with_prefix``), on every backend: what lets the
command line take a unique prefix of a run id, and what makes a prefix ambiguous."""

from __future__ import annotations

import pytest

from wayline.cli.run_ids import resolve_run_id, unique_prefixes
from wayline.errors import AmbiguousRunIdError, RunNotFoundError
from wayline.store.base import Store

IDS = ["3aecc30a-73d9", "3aecc31b-0000", "71cdc7d2-6eef", "abc", "abc-2", "a_c%", "ab%d"]


def _runs(store: Store) -> None:
    for run_id in IDS:
        store.create_run("t1", run_id, graph_name="g", graph_version="1", durability="sync")
    store.create_run("t2", "71cdc7d2-other", graph_name="g", graph_version="1", durability="sync")


def test_ids_with_a_prefix_are_the_tenants_own_in_order(store: Store) -> None:
    _runs(store)
    assert store.run_ids_with_prefix("t1", "3aecc3") == ["3aecc30a-73d9", "3aecc31b-0000"]
    assert store.run_ids_with_prefix("t1", "3aecc3", limit=1) == ["3aecc30a-73d9"]
    assert store.run_ids_with_prefix("t1", "71cd") == ["71cdc7d2-6eef"]  # not t2's
    assert store.run_ids_with_prefix("t1", "abc") == ["abc", "abc-2"]
    # no pattern characters: '_' and '%' are themselves
    assert store.run_ids_with_prefix("t1", "a_") == ["a_c%"]
    assert store.run_ids_with_prefix("t1", "ab%") == ["ab%d"]
    assert store.run_ids_with_prefix("t1", "zz") == []


def test_a_unique_prefix_resolves_and_others_are_typed_errors(store: Store) -> None:
    _runs(store)
    assert resolve_run_id(store, "t1", "71c") == "71cdc7d2-6eef"
    assert resolve_run_id(store, "t1", "abc") == "abc"  # a whole id wins over longer ones
    with pytest.raises(AmbiguousRunIdError, match=r"3aecc30a-73d9, 3aecc31b-0000\): give more"):
        resolve_run_id(store, "t1", "3aecc")
    with pytest.raises(RunNotFoundError, match="tenant 't2' has an id starting with 'ab'"):
        resolve_run_id(store, "t2", "ab")


def test_unique_prefixes_are_taken_back(store: Store) -> None:
    _runs(store)
    cut = unique_prefixes(store, "t1", IDS)
    assert cut["3aecc30a-73d9"] == "3aecc30a"
    assert cut["71cdc7d2-6eef"] == "71cdc7d2"
    assert cut["abc"] == "abc"  # a prefix of another id stays whole
    assert unique_prefixes(store, "t1", ["3aecc30a-73d9"], least=4) == {"3aecc30a-73d9": "3aecc30"}
    for run_id, short in cut.items():
        assert resolve_run_id(store, "t1", short) == run_id
