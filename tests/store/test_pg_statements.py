"""PostgreSQL statements are prepared at first use unless the URL turns that off."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

import wayline
from wayline import END, START, StateGraph
from wayline.errors import StoreURLError


class S(TypedDict):
    n: int


def _prepared_after_a_run(url: str) -> int:
    store = wayline.connect(url)
    g = StateGraph(S)
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    assert g.compile(store).invoke({"n": 0}, {"configurable": {"thread_id": "t"}}) == {"n": 1}
    pool: Any = store._pool  # type: ignore[attr-defined]
    with pool.connection() as conn:  # the pool's one connection: the run's
        (count,) = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
    store.close()
    return int(count)


def test_statements_are_prepared_at_first_use_by_default(pg_url: str) -> None:
    assert _prepared_after_a_run(pg_url) >= 3  # the run's read, its commits


def test_a_pooler_in_transaction_mode_can_turn_preparing_off(pg_url: str) -> None:
    assert _prepared_after_a_run(f"{pg_url}&prepare_threshold=none") == 0


@pytest.mark.parametrize("value", ["-1", "two"])
def test_a_bad_prepare_threshold_is_refused(pg_url: str, value: str) -> None:
    with pytest.raises(StoreURLError, match="prepare_threshold"):
        wayline.connect(f"{pg_url}&prepare_threshold={value}")
