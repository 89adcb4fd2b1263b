"""The claim among many runs, by counts: one transaction of three statements and no read,
every access to ``runs`` through an index (queued and waiting runs are not scanned), and
the order: expired leases first, then the oldest released or queued run."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wayline.store.base import Store
from wayline.store.sql_store import SQLStore

T = "tenant-q"
G = ("g", "1", "")


def _fill(store: Any, *, queued: int, waiting: int) -> None:
    """Runs as ``enqueue`` writes them, many to a transaction; waiting ones interrupted and
    older than every queued one (were they in the claim's range, they would come first)."""
    base = time.time() - 3600
    rows = []
    for kind, n, at in (("w", waiting, base), ("q", queued, base + 1800)):
        for i in range(n):
            run_id = f"{kind}{i:05d}"
            stored, crc = store.payloads.put(("runs", T, run_id, "inbox"), T, f"{run_id}|n", b"x")
            unheld = (0, None, None)  # fencing token, lease owner, lease expiry
            row = (
                T,
                run_id,
                *G[:2],
                "sync",
                *unheld,
                at + i * 1e-3,
                at + i * 1e-3,
                stored,
                "",
                crc,
            )
            rows.append((*row, uuid.uuid4().hex, at + i * 1e-3, "", None))
    with store._tx(T) as db:
        db.executemany(store.q.Q_INSERT_RUN, rows)
        ph = store.placeholder
        db.execute(
            f"UPDATE runs SET status = 'interrupted', inbox = NULL, inbox_crc = NULL "
            f"WHERE tenant_id = {ph} AND substr(run_id, 1, 1) = 'w'",
            (T,),
        )
    with store._tx() as db:
        db.execute("ANALYZE" if store.dialect == "sqlite" else "ANALYZE runs")


class _Count:
    def __init__(self, store: Any) -> None:
        self.transactions = self.statements = self.reads = 0
        tx, read = store._tx, store._read

        @contextmanager
        def counted(tenant: str | None = None) -> Iterator[Any]:
            self.transactions += 1
            with tx(tenant) as db:
                yield _Statements(db, self)

        def counted_read(*args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            return read(*args, **kwargs)

        store._tx, store._read = counted, counted_read


class _Statements:
    def __init__(self, db: Any, count: _Count) -> None:
        self.db, self.count = db, count

    def execute(self, query: str, params: Any = ()) -> Any:
        self.count.statements += 1
        return self.db.execute(query, params)


def test_a_claim_is_one_transaction_of_three_statements(store: Store) -> None:
    """Queued input of stopped runs moved to their inboxes (none here: one read of an
    index of waiting entries), the candidate, the take."""
    _fill(store, queued=50, waiting=20)
    count = _Count(store)
    claimed = store.claim_next(owner="w", lease_seconds=30, graphs=[G])
    assert claimed is not None
    run, token = claimed
    assert run.run_id == "q00000" and run.status == "running" and token == run.fencing_token
    assert run.inbox == b"x"  # the whole row came back with the claim: no read after it
    assert (count.transactions, count.statements, count.reads) == (1, 3, 0)


def test_the_claim_reads_runs_by_index_only(store: Store) -> None:
    if not isinstance(store, SQLStore):
        return
    _fill(store, queued=3000, waiting=1000)
    query, times = store._claim_query((G,))  # the query a claim runs, as it runs it
    now = time.time()
    params: list[Any] = []
    for count in times:
        params += [*G, *[now] * count, None, None]
    if store.dialect == "sqlite":
        plan = [str(r[-1]) for r in store._read("EXPLAIN QUERY PLAN " + query, params)]
        assert not [p for p in plan if p.startswith("SCAN runs")], plan
        assert any("runs_queued" in p for p in plan), plan
    else:
        plan = [str(r[0]) for r in store._read("EXPLAIN " + query, params)]
        assert not [p for p in plan if "Seq Scan on runs" in p], plan
        assert any("runs_queued" in p for p in plan), plan


def test_claim_order_expired_first_then_oldest_update(store: Store) -> None:
    _fill(store, queued=3, waiting=2)
    first = store.claim_next(owner="a", lease_seconds=30, graphs=[G])
    second = store.claim_next(owner="a", lease_seconds=0.05, graphs=[G])
    assert first is not None and second is not None
    assert [first[0].run_id, second[0].run_id] == ["q00000", "q00001"]
    store.release(T, "q00000", first[1])  # a graceful stop: running, no lease
    deadline = time.monotonic() + 10
    while time.time() <= (store.get_run(T, "q00001").lease_expires_at or 0):  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.01)
    order = []
    while (claimed := store.claim_next(owner="b", lease_seconds=30, graphs=[G])) is not None:
        order.append(claimed[0].run_id)
    # The expired lease first; then released and queued runs by their last update (the
    # released run's claim is newer than the queued run's start); waiting runs never.
    assert order == ["q00001", "q00002", "q00000"]
