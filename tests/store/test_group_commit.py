"""Group commit across runs, by counts: transactions (each one fsync), statements per group,
and what a failing run leaves to the others. On every backend (``store`` fixture)."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from effect_rows import effect_record
from turns import holding_write_turn

import wayline
from wayline.errors import EffectRecordChanged, LeaseLost, StoreError, TenantMismatchError
from wayline.store.base import Store
from wayline.store.group import GroupCommit
from wayline.store.payloads import checksum
from wayline.store.records import CommitBatch, DeltaRecord, EffectRecord, EffectWrite, RunUpdate

T = "tenant-g"
DEADLINE_S = 10.0


class _Counting:
    """Counts the transactions a real store opens and the statements sent inside them, by
    wrapping its ``_tx`` and, on PostgreSQL, its one-statement transactions (the store
    itself, its connection and its SQL are untouched)."""

    def __init__(self, store: Any) -> None:
        self.transactions = 0
        self.statements = 0
        inner = store._tx

        @contextmanager
        def counted(tenant: str | None = None) -> Iterator[Any]:
            self.transactions += 1
            with inner(tenant) as db:
                yield _CountingExecutor(db, self)

        store._tx = counted
        alone = getattr(store, "_one_statement", None)
        if alone is not None:

            def counted_alone(query: str, params: Any) -> Any:
                self.transactions += 1
                self.statements += 1
                return alone(query, params)

            store._one_statement = counted_alone


class _CountingExecutor:
    def __init__(self, db: Any, counter: _Counting) -> None:
        self.db = db
        self.counter = counter

    def execute(self, query: str, params: Any = ()) -> Any:
        self.counter.statements += 1
        return self.db.execute(query, params)

    def executemany(self, query: str, rows: Any) -> Any:
        self.counter.statements += 1
        return self.db.executemany(query, rows)


def _runs(store: Store, n: int, prefix: str = "r") -> list[tuple[str, int]]:
    """n runs held as a worker holds them: claimed from the queue, so status ``running``."""
    for i in range(n):
        store.create_run(T, f"{prefix}{i}", graph_name="g", graph_version="1", durability="sync")
    out = []
    for _ in range(n):
        claimed = store.claim_next(
            owner="w", lease_seconds=30, graphs=[("g", "1", "")], tenant_id=T
        )
        assert claimed is not None
        run, token = claimed
        out.append((run.run_id, token))
    assert [r for r, _ in out] == [f"{prefix}{i}" for i in range(n)]  # in queue order
    return out


def _step(step: int) -> CommitBatch:
    return CommitBatch(
        deltas=[DeltaRecord(step, f"delta {step}".encode())],
        run=RunUpdate("running", step, ("node",)),
    )


def test_many_runs_one_transaction_and_a_fixed_number_of_statements(store: Store) -> None:
    counter = _Counting(store)
    statements = {}
    for n in (2, 8):
        runs = _runs(store, n, prefix=f"n{n}-")
        before_tx, before_st = counter.transactions, counter.statements
        errors = store.commit_many([(T, r, tok, _step(0)) for r, tok in runs])
        assert errors == [None] * n
        assert counter.transactions - before_tx == 1  # one transaction: one fsync
        statements[n] = counter.statements - before_st
        for r, _ in runs:
            run = store.get_run(T, r)
            assert run is not None and run.step == 0
            assert [d.payload for d in store.load_deltas(T, r, -1, 0)] == [b"delta 0"]
    # The statements do not grow with the group: one fenced update and one insert, or on
    # PostgreSQL one statement that is its own transaction (one round trip).
    one_trip = getattr(store, "dialect", None) == "postgres"
    assert statements[8] == statements[2] == (1 if one_trip else 2)


def test_wide_statements_are_not_parsed_again_at_every_execution(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's group statement of 8 runs has 103 parameters, a claim over two graph
    versions 56: psycopg converts a ``%s`` query of more than 50 parameters anew at every
    execution (150-250 us of the worker's CPU for a group of 4-8), so such a statement is
    numbered (``$1``...) and sent as written."""
    import psycopg._queries as queries

    store = wayline.connect(pg_url)

    parsed: list[bytes] = []
    real = queries._query2pg_nocache

    def counted(query: bytes, *args: Any) -> Any:
        parsed.append(query)
        return real(query, *args)

    monkeypatch.setattr(queries, "_query2pg_nocache", counted)
    try:
        runs = _runs(store, 8)
        for step in range(3):
            errors = store.commit_many([(T, r, tok, _step(step)) for r, tok in runs])
            assert errors == [None] * 8
        assert [q for q in parsed if b"deltas" in q] == []
        assert _steps(store, runs) == [2] * 8
        # a claim over two graph versions: 56 parameters
        graphs = [("g", "1", "f"), ("g", "1", "")]
        store.create_run(T, "c", graph_name="g", graph_version="1", durability="sync")
        for _ in range(3):
            claimed = store.claim_next(owner="w", lease_seconds=30, graphs=graphs, tenant_id=T)
            assert claimed is not None and claimed[0].run_id == "c"
            store.release(T, "c", claimed[1])
        assert parsed == []
    finally:
        store.close()


def test_a_group_statement_is_prepared_once_whatever_its_values(pg_url: str) -> None:
    """A statement is prepared once per set of parameter types, and psycopg sends a small
    int as int4 and a large one as int8: a CRC at random made a new prepared statement (its
    parse and plans) for the same group. On one connection, 30 groups of 4 runs with CRCs
    of either size are one prepared statement."""
    from wayline.store.pg_statements import group_one_trip, numbered
    from wayline.store.postgres import PostgresStore

    sep = "&" if "?" in pg_url else "?"
    store = wayline.connect(f"{pg_url}{sep}pool_size=1")
    try:
        runs = _runs(store, 4)
        large: set[bool] = set()
        for step in range(30):
            payload = f"delta {step} {'x' * step}".encode()
            batch = CommitBatch(
                deltas=[DeltaRecord(step, payload)], run=RunUpdate("running", step, ("node",))
            )
            assert store.commit_many([(T, r, tok, batch) for r, tok in runs]) == [None] * 4
            large.update(checksum(("deltas", T, r, step), payload) >= 2**31 for r, _ in runs)
        assert large == {True, False}  # CRCs that fit an int4 and CRCs that do not
        assert isinstance(store, PostgresStore)
        pool: Any = store._pool
        with pool.connection() as conn:
            plans = conn.execute(
                "SELECT generic_plans + custom_plans FROM pg_prepared_statements"
                " WHERE statement = %s",
                (numbered(group_one_trip(4)),),
            ).fetchall()
        assert plans == [(30,)]
    finally:
        store.close()


def test_the_group_statement_sets_the_columns_the_fenced_update_sets() -> None:
    """PostgreSQL's group statement writes many runs' rows in one UPDATE of its own text:
    it must set every column ``Q_FENCE_UPDATE`` sets, and only those."""
    from wayline.store.pg_statements import QUERIES, group_one_trip

    def assigned(sql: str) -> set[str]:
        updates = sql[sql.index("UPDATE runs") :]
        clause = updates[
            : min(i for i in (updates.find(" FROM g"), updates.find("WHERE")) if i > 0)
        ]
        return set(re.findall(r"(?:SET|,)\s+(\w+) =", clause))

    fence = assigned(QUERIES.Q_FENCE_UPDATE)
    assert {"status", "step", "state_digest", "inbox", "lease_owner"} <= fence
    assert assigned(group_one_trip(3)) == fence


def test_a_stale_token_fails_its_run_alone(store: Store) -> None:
    runs = _runs(store, 4)
    stale_run, _ = runs[1]
    store.claim(T, stale_run, owner="other", lease_seconds=30, steal=True)
    errors = store.commit_many([(T, r, tok, _step(0)) for r, tok in runs])
    assert isinstance(errors[1], LeaseLost)
    assert [e is None for i, e in enumerate(errors) if i != 1] == [True] * 3
    assert store.load_deltas(T, stale_run, -1, 10) == []
    stale = store.get_run(T, stale_run)
    assert stale is not None and stale.step == -1
    for i in (0, 2, 3):
        run = store.get_run(T, runs[i][0])
        assert run is not None and run.step == 0


def test_a_bad_row_rolls_back_its_run_alone(store: Store) -> None:
    runs = _runs(store, 3)
    for r, tok in runs:
        store.commit(T, r, tok, _step(0))
    bad_run, bad_token = runs[2]
    items = [(T, r, tok, _step(1)) for r, tok in runs[:2]]
    duplicate = CommitBatch(  # step 0's delta again: a primary-key violation
        deltas=[DeltaRecord(0, b"again")], run=RunUpdate("running", 1, ("node",))
    )
    items.append((T, bad_run, bad_token, duplicate))
    errors = store.commit_many(items)
    assert errors[:2] == [None, None]
    assert isinstance(errors[2], StoreError) and "rolled back alone" in str(errors[2])
    bad = store.get_run(T, bad_run)
    assert bad is not None and bad.step == 0  # its run-row update went with its rows
    assert [d.payload for d in store.load_deltas(T, bad_run, -1, 5)] == [b"delta 0"]
    for r, _ in runs[:2]:
        run = store.get_run(T, r)
        assert run is not None and run.step == 1


def _steps(store: Store, runs: list[tuple[str, int]]) -> list[int | None]:
    """The step each run's row is at (None: no row)."""
    return [getattr(store.get_run(T, r), "step", None) for r, _ in runs]


def _intent(run_id: str, token: int, key: str) -> EffectRecord:
    return effect_record(tenant_id=T, key=key, run_id=run_id, fencing_token=token)


def test_effect_intents_of_several_runs_share_one_transaction(store: Store) -> None:
    runs = _runs(store, 4)
    counter = _Counting(store)
    items = [
        (T, r, tok, CommitBatch(effects=[EffectWrite(_intent(r, tok, f"k-{r}"), None)]))
        for r, tok in runs
    ]
    assert store.commit_many(items) == [None] * 4
    assert counter.transactions == 1  # four intents durable with one fsync
    for r, tok in runs:
        rec = store.get_effect(T, f"k-{r}")
        assert rec is not None and (rec.status, rec.run_id, rec.fencing_token) == (
            "EXECUTING",
            r,
            tok,
        )


def test_an_effect_record_another_writer_moved_fails_its_run_alone(store: Store) -> None:
    runs = _runs(store, 3)
    intents = {r: _intent(r, tok, f"k-{r}") for r, tok in runs}
    for r, tok in runs:
        store.commit(T, r, tok, CommitBatch(effects=[EffectWrite(intents[r], None)]))
    moved = runs[1][0]
    by_operator = dataclasses.replace(intents[moved], status="FAILED", error="refunded")
    assert store.put_effect(moved, None, by_operator, expect="EXECUTING")  # resolved first
    outcomes = [
        (T, r, tok, CommitBatch(effects=[EffectWrite(_outcome(intents[r]), "EXECUTING")]))
        for r, tok in runs
    ]
    errors = store.commit_many(outcomes)
    assert isinstance(errors[1], EffectRecordChanged) and errors[1].key == f"k-{moved}"
    assert (errors[0], errors[2]) == (None, None)
    for r in (runs[0][0], runs[2][0]):
        rec = store.get_effect(T, f"k-{r}")
        assert rec is not None and (rec.status, rec.result) == ("SUCCEEDED", b"charged")
    kept = store.get_effect(T, f"k-{moved}")
    assert kept is not None and (kept.status, kept.error) == ("FAILED", "refunded")


def test_a_run_cannot_commit_an_effect_record_of_another_tenant(store: Store) -> None:
    ((run_id, token),) = _runs(store, 1)
    foreign = dataclasses.replace(_intent(run_id, token, "k-foreign"), tenant_id="other")
    with pytest.raises(TenantMismatchError):
        store.commit(T, run_id, token, CommitBatch(effects=[EffectWrite(foreign, None)]))
    assert store.get_effect("other", "k-foreign") is None
    assert store.get_effect(T, "k-foreign") is None


def _outcome(intent: EffectRecord) -> EffectRecord:
    return dataclasses.replace(intent, status="SUCCEEDED", result=b"charged")


def test_a_settled_run_gives_its_lease_up_in_its_last_commit(store: Store) -> None:
    ((run_id, token),) = _runs(store, 1)
    counter = _Counting(store)
    store.commit(T, run_id, token, CommitBatch(run=RunUpdate("done", 0, ())))
    run = store.get_run(T, run_id)
    assert run is not None and run.status == "done"
    assert run.lease_owner is None and run.lease_expires_at is None
    assert counter.transactions == 1


def test_a_group_finishes_steps_and_takes_inboxes_each_run_as_its_batch_says(
    store: Store,
) -> None:
    """One group: a run that finishes (digest kept, lease given up), one that steps on, one
    whose batch applied its inbox, and one that errs; each row as its own commit leaves it."""
    runs = _runs(store, 4)
    fed_id = runs[2][0]  # new input while it runs: its step applies it
    store.enqueue(T, fed_id, b"input", graph_name="g", graph_version="1", durability="sync")
    before = store.get_run(T, fed_id)
    assert before is not None and before.inbox is not None
    batches = [
        CommitBatch(
            deltas=[DeltaRecord(0, b"last")],
            run=RunUpdate("done", 0, (), state_digest="d0"),
        ),
        _step(0),
        CommitBatch(
            deltas=[DeltaRecord(0, b"input step")],
            run=RunUpdate("running", 0, ("node",)),
            take_inbox=True,
        ),
        CommitBatch(
            deltas=[DeltaRecord(0, b"oops")],
            run=RunUpdate("failed", 0, ("node",), error="ValueError: no"),
        ),
    ]
    errors = store.commit_many([(T, r, tok, b) for (r, tok), b in zip(runs, batches, strict=True)])
    assert errors == [None] * 4
    done, stepped, fed, failed = (store.get_run(T, r) for r, _ in runs)
    assert done is not None and (done.status, done.state_digest) == ("done", "d0")
    assert done.lease_owner is None and done.lease_expires_at is None
    assert stepped is not None and (stepped.status, stepped.next_nodes) == ("running", ("node",))
    assert stepped.lease_owner == "w"
    assert fed is not None and fed.step == 0 and fed.inbox is None
    assert failed is not None and (failed.status, failed.error) == ("failed", "ValueError: no")
    assert failed.lease_owner is None
    payloads = [store.load_deltas(T, r, -1, 0)[0].payload for r, _ in runs]
    assert payloads == [b"last", b"delta 0", b"input step", b"oops"]


def _record_groups(store: Store) -> list[int]:
    sizes: list[int] = []
    inner = store.commit_many

    def commit_many(items: Any) -> list[BaseException | None]:
        sizes.append(len(items))
        return inner(items)

    store.commit_many = commit_many  # type: ignore[method-assign]
    return sizes


class _Gate:
    """Holds the first commit inside its transaction until the other runs have queued."""

    def __init__(self, store: Store, group: GroupCommit, others: int) -> None:
        self.first = True
        self.entered = threading.Event()
        inner = store.commit

        def commit(tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
            if self.first:
                self.first = False
                self.entered.set()
                deadline = time.monotonic() + DEADLINE_S
                while group.queued() < others:
                    assert time.monotonic() < deadline, "the other runs never queued"
                    time.sleep(0.001)
            inner(tenant_id, run_id, token, batch)

        store.commit = commit  # type: ignore[method-assign]


@pytest.fixture
def two_handles(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two store handles on one SQLite file: the second stands for another process."""
    url = f"sqlite:///{tmp_path / 'turns.db'}"
    store, other = wayline.connect(url), wayline.connect(url)
    yield store, other
    store.close()
    other.close()


def _committing(group: GroupCommit, errors: list[BaseException]) -> Callable[[str, int], None]:
    """A thread's body: commit step 0 of one run through ``group``, keeping its error."""

    def one(run_id: str, token: int) -> None:
        try:
            group.commit(T, run_id, token, _step(0))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    return one


def test_runs_ready_together_share_one_transaction(store: Store) -> None:
    runs = _runs(store, 8)
    group = GroupCommit(store)
    sizes = _record_groups(store)
    gate = _Gate(store, group, others=7)
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_committing(group, errors), args=r) for r in runs]
    threads[0].start()  # the first commits alone: the others queue while it is in flight
    assert gate.entered.wait(DEADLINE_S)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert errors == []
    # The first commits alone (held until the rest queued); the other seven share one.
    assert (group.stats.commits, group.stats.transactions, group.stats.largest) == (8, 2, 7)
    assert sizes == [7]  # one commit_many (one transaction) carried the seven
    assert _steps(store, runs) == [0] * len(runs)


def test_commits_queued_while_the_leader_waits_for_the_write_turn_join_its_group(
    two_handles: tuple[Store, Store],
) -> None:
    """Another process's transaction holds the SQLite file's writer turn (here a second
    handle, which takes the same file lock): the leader waits for it holding nothing of the
    queue, and takes the queue when its turn comes, so the eight commits share one
    transaction instead of the first going alone."""
    store, other = two_handles
    runs = _runs(store, 8)
    group = GroupCommit(store)
    sizes = _record_groups(store)
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_committing(group, errors), args=r) for r in runs]
    with holding_write_turn(other):
        for t in threads:
            t.start()
        deadline = time.monotonic() + DEADLINE_S
        while group.queued() < 8:  # the leader's own request too: it took nothing yet
            assert time.monotonic() < deadline, "the runs never queued"
            time.sleep(0.001)
    for t in threads:
        t.join(DEADLINE_S)
    assert errors == []
    assert (group.stats.commits, group.stats.transactions, group.stats.largest) == (8, 1, 8)
    assert sizes == [8]
    assert _steps(store, runs) == [0] * len(runs)


def test_a_write_turn_that_cannot_be_taken_fails_the_commits_it_was_for(
    two_handles: tuple[Store, Store],
) -> None:
    """A leader that cannot take the turn (here: this thread holds it on a second handle,
    and would wait for itself) fails its own commit; nothing is reported committed."""
    store, other = two_handles
    ((run_id, token),) = _runs(store, 1)
    group = GroupCommit(store)
    with other.write_turn(), pytest.raises(StoreError, match="second handle"):
        group.commit(T, run_id, token, _step(0))
    assert group.queued() == 0
    group.commit(T, run_id, token, _step(0))  # the next leader is not stuck behind it
    run = store.get_run(T, run_id)
    assert run is not None and run.step == 0


def test_a_failed_run_in_a_group_raises_only_in_its_own_thread(store: Store) -> None:
    runs = _runs(store, 4)
    group = GroupCommit(store)
    stale_run, _ = runs[3]
    store.claim(T, stale_run, owner="other", lease_seconds=30, steal=True)
    gate = _Gate(store, group, others=3)
    outcomes: dict[str, BaseException | None] = {}

    def one(run_id: str, token: int) -> None:
        try:
            group.commit(T, run_id, token, _step(0))
            outcomes[run_id] = None
        except BaseException as exc:
            outcomes[run_id] = exc

    # The first thread commits alone; the stale run lands in the group that follows.
    threads = [threading.Thread(target=one, args=r) for r in runs]
    threads[0].start()
    assert gate.entered.wait(DEADLINE_S)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert isinstance(outcomes[stale_run], LeaseLost)
    assert [outcomes[r] for r, _ in runs[:3]] == [None] * 3
    assert group.stats.transactions == 2


@pytest.mark.parametrize("n", [1])
def test_an_empty_group_commits_nothing(store: Store, n: int) -> None:
    counter = _Counting(store)
    assert store.commit_many([]) == []
    assert counter.transactions == 0
