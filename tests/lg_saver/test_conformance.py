"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``)
against ``WaylineSaver`` on SQLite and PostgreSQL: every base capability and the extended
ones (delete_for_runs, copy_thread, prune). The suite calls only the async methods, and
``graph.invoke`` uses the sync ones, so every case also runs through a saver whose async
methods call the sync methods directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate

from wayline.langgraph import WaylineSaver
from wayline.store.encrypted import StaticKeys

EXPECTED = {
    "put": 17,
    "put_writes": 10,
    "get_tuple": 10,
    "list": 16,
    "delete_thread": 5,
    "delete_for_runs": 7,
    "copy_thread": 8,
    "prune": 8,
}
"""Cases per capability in langgraph-checkpoint-conformance 0.0.2."""


class SyncDriven(WaylineSaver):
    """The async entry points call the sync methods inline: the suite then tests exactly
    what ``graph.invoke`` calls."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kw: Any) -> AsyncIterator[Any]:
        for item in self.list(config, **kw):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


KEYS = StaticKeys({"default": {"k1": b"\x07" * 32}}, {"default": "k1"})


@pytest.fixture(params=["sqlite", "postgres", "sqlite-encrypted"])
def url_and_keys(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    if request.param == "postgres":
        yield str(request.getfixturevalue("pg_url")), None
    else:
        keys = KEYS if request.param.endswith("encrypted") else None
        yield f"sqlite:///{tmp_path / 'lg.db'}", keys


@pytest.mark.parametrize("methods", ["async", "sync"])
def test_conformance_every_capability(url_and_keys: tuple[str, Any], methods: str) -> None:
    url, keys = url_and_keys
    cls = WaylineSaver if methods == "async" else SyncDriven

    @checkpointer_test(name=f"WaylineSaver-{methods}")
    async def make() -> AsyncIterator[WaylineSaver]:
        saver = cls.from_url(url, keys=keys)
        yield saver
        saver.close()

    report = asyncio.run(validate(make))
    got = {cap: (r.passed, r.tests_passed, r.failures) for cap, r in report.results.items()}
    assert got == {cap: (True, n, []) for cap, n in EXPECTED.items()}
