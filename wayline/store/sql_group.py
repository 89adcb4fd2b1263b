"""Group commit on SQL: several runs' batches in one transaction, each fenced on its own.

The fast path costs a fixed number of statements whatever the group's size: one
``executemany`` per kind of run-row update (each fenced by the run's token and, for a step
that keeps the status, by the status), one per kind of row (``SQLStore._write``), one
COMMIT. On PostgreSQL each is one round trip (psycopg pipelines ``executemany``), and a
group of plain steps (a run row and one delta each, what a worker's slots commit most)
skips this path: ``PostgresStore.commit_many`` sends it as one statement, its own
transaction, one round trip in all (``bench/fleet.py``'s PostgreSQL cells at concurrency
8, interleaved pairs, steps/s by this path against that one: one process 3,560-3,740
against 3,964-4,048, two 3,330-3,966 against 4,160-4,306; four, on two CPUs, 3,659-4,040
against 3,010-3,825: there the CPUs are the limit, and commits that return sooner make
smaller groups, 2.4-3.6 commits a transaction against 4.3); on SQLite
each is one trip through the GIL-releasing driver, and each is a moment another thread may
take the GIL while the committing thread waits for it back: the read of the runs' tokens
that used to come first is gone for that reason.

When an update finds fewer rows than it was given (a run whose lease was taken, or whose
status moved under it) or anything else fails (a bad row), the whole transaction is rolled
back and the group is committed again with a savepoint per run, so the run at fault fails
alone (a stale token gets ``LeaseLost``) and the rest commit: savepoints cost two
statements a run, so only the rare failing group pays for them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import SimpleNamespace
from typing import Any, Protocol

from wayline.errors import LeaseLost, StoreError, WaylineError
from wayline.store.records import CommitBatch
from wayline.store.sql_core import Executor
from wayline.store.sql_fence import first_fence

__all__ = ["GroupCommitter", "commit_group"]

log = logging.getLogger("wayline.store")

Item = tuple[str, str, int, CommitBatch]
Fenced = tuple[tuple[str, str], int, CommitBatch]


class GroupCommitter(Protocol):
    """What a group commit needs of the store (``StepsSQL`` has it): the one-run commit's
    parts, so that a group writes its rows exactly as that many single commits would."""

    q: SimpleNamespace

    def _tx(self, tenant: str | None = None) -> AbstractContextManager[Executor]: ...

    def _rescope(self, db: Executor, tenant: str) -> None: ...

    def _create(self, db: Executor, tenant_id: str, run_id: str, batch: CommitBatch) -> None: ...

    def _fence(
        self, db: Executor, tenant_id: str, run_id: str, token: int, batch: CommitBatch, now: float
    ) -> None: ...

    def _write(self, db: Executor, fenced: Sequence[Fenced], now: float) -> None: ...


class _Diverged(Exception):
    """The fast path's read no longer matches the rows: redo the group run by run."""


def commit_group(store: GroupCommitter, items: Sequence[Item]) -> list[BaseException | None]:
    """Commit ``items`` in one transaction; each run's error (None: committed)."""
    if not items:
        return []
    tenants = {t for t, _, _, _ in items}
    if len(tenants) == 1 or not getattr(store, "rls", False):
        try:
            with store._tx(items[0][0]) as db:
                return _fast(store, db, items, time.time())
        except Exception as exc:  # a bad row or a moved token: find the run at fault
            log.info("group commit of %d runs retried run by run: %s", len(items), exc)
    return _isolated(store, items)


def _fast(store: GroupCommitter, db: Executor, items: Sequence[Item], now: float) -> list[Any]:
    q = store.q
    fenced = []
    updates: dict[str, list[tuple[Any, ...]]] = {}
    for tenant_id, run_id, token, batch in items:
        key = (tenant_id, run_id)
        store._create(db, tenant_id, run_id, batch)
        query, params = first_fence(q, key, token, batch, now)
        updates.setdefault(query, []).append(params)
        fenced.append((key, token, batch))
    for query, rows in updates.items():
        if _rowcount(db.executemany(query, rows)) != len(rows):
            raise _Diverged("a run's fencing token or status is not the one its batch expects")
    store._write(db, fenced, now)
    return [None] * len(items)


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


def _isolated(store: GroupCommitter, items: Sequence[Item]) -> list[BaseException | None]:
    """The slow path: a savepoint per run, so one run's failure rolls back only its rows."""
    errors: list[BaseException | None] = []
    now = time.time()
    with store._tx(items[0][0]) as db:
        for tenant_id, run_id, token, batch in items:
            store._rescope(db, tenant_id)
            db.execute("SAVEPOINT wayline_run")
            try:
                store._create(db, tenant_id, run_id, batch)
                store._fence(db, tenant_id, run_id, token, batch, now)
                store._write(db, [((tenant_id, run_id), token, batch)], now)
            except Exception as exc:
                db.execute("ROLLBACK TO SAVEPOINT wayline_run")
                db.execute("RELEASE SAVEPOINT wayline_run")
                errors.append(_alone(run_id, exc))
                continue
            except LeaseLost as exc:
                db.execute("ROLLBACK TO SAVEPOINT wayline_run")
                db.execute("RELEASE SAVEPOINT wayline_run")
                errors.append(exc)
                continue
            db.execute("RELEASE SAVEPOINT wayline_run")
            errors.append(None)
    return errors


def _alone(run_id: str, exc: Exception) -> BaseException:
    if isinstance(exc, WaylineError):  # says what went wrong already (a store error, an
        return exc  # effect record another writer changed)
    return StoreError(
        f"the commit of run {run_id!r} failed and was rolled back alone (the other runs of "
        f"its group committed): {exc}; the run's last committed step is intact, resume it"
    )
