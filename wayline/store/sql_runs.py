"""Runs and claims over SQL: the run row from its creation (or its queued input) through
the claims, leases, retries and cancellations of the workers that hold it. The contract
(``RunsContract``) and the SQL that keeps it (``RunsSQL``), written once for SQLite and
PostgreSQL; a run row maps to a ``RunRecord`` by column name."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from wayline.errors import CorruptionError, LeaseConflictError, LeaseLost, RunNotFoundError
from wayline.store import observe
from wayline.store.payloads import json_column
from wayline.store.records import RunProgress, RunRecord, RunStatus
from wayline.store.sql_core import Executor
from wayline.store.sql_fence import classes_json
from wayline.store.sql_queue import QueueSQL, inbox_ident
from wayline.store.work_signal import WorkSignal

__all__ = ["RunsContract", "RunsSQL", "inbox_ident"]


class RunsContract(Protocol):
    """A run's row: created, queued, claimed under a lease, retried, cancelled, listed."""

    def create_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        incarnation: str | None = None,
        fingerprint: str = "",
        shape: str | None = None,
    ) -> RunRecord:
        """Create the run row, or return the existing one: creating twice is not an error.
        ``incarnation``: the new run's (default: random). (A run that ``invoke`` starts is
        created by the commit of its input step instead: ``CommitBatch.create``.)"""
        ...

    def get_run(self, tenant_id: str, run_id: str) -> RunRecord | None: ...

    def run_progress(self, tenant_id: str, run_id: str) -> RunProgress | None:
        """The run's status, step, error and fencing token, and whether input waits: one
        narrow read of its row (None: no such run)."""
        ...

    def list_runs(
        self,
        tenant_id: str,
        *,
        status: RunStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[RunRecord]:
        """The tenant's runs (of ``status``), most recently updated first, a page at a time."""
        ...

    def run_ids_with_prefix(self, tenant_id: str, prefix: str, *, limit: int = 10) -> list[str]:
        """The tenant's run ids that start with ``prefix`` (sorted, at most ``limit``): how
        the command line accepts a unique prefix of a run id."""
        ...

    def enqueue(
        self,
        tenant_id: str,
        run_id: str,
        inbox: bytes,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        fingerprint: str = "",
        shape: str | None = None,
        engine: str = "wayline",
    ) -> RunRecord:
        """Give a run input for a worker to apply (creating the run if needed); wakes workers.
        ``engine``: which engine executes it (``RunRecord.engine``)."""
        ...

    def claim_next(
        self,
        *,
        owner: str,
        lease_seconds: float,
        graphs: Sequence[tuple[str, str, str]],
        tenant_id: str | None = None,
    ) -> tuple[RunRecord, int] | None:
        """Claim the oldest claimable run of these (graph name, version, fingerprint) triples
        (a run recorded before fingerprints has '': serve it with that triple too) (new,
        resumable, due for a retry, or whose holder's lease expired); returns it with its
        new fencing token."""
        ...

    def next_expiry(
        self, *, graphs: Sequence[tuple[str, str, str]], tenant_id: str | None = None
    ) -> float | None:
        """When the first lease held on a run of these graphs expires, or the first timer or
        approval expiry of one falls due (None: neither)."""
        ...

    def heartbeat(
        self, tenant_id: str, run_id: str, *, token: int, owner: str, lease_seconds: float
    ) -> tuple[bool, bool]:
        """Extend a lease; returns (still held, cancellation requested)."""
        ...

    def request_cancel(self, tenant_id: str, run_id: str) -> bool: ...

    def schedule_retry(
        self, tenant_id: str, run_id: str, *, token: int, wake_at: float, error: str
    ) -> None: ...

    def note_error(
        self,
        tenant_id: str,
        run_id: str,
        *,
        token: int,
        error: str,
        status: RunStatus | None = None,
    ) -> None:
        """Record an error beside the run, fenced, without touching its committed step (a
        failed read must never rewind a run); ``status`` moves it to a visible state."""
        ...

    def requeue(self, tenant_id: str, run_id: str) -> bool: ...

    def wait_for_work(self, timeout: float) -> None:
        """Block until work may have arrived (a notification) or ``timeout`` passes."""
        ...

    def wake_waiting(self) -> None:
        """End this process's ``wait_for_work`` calls now, where the backend can (a stop)."""
        ...

    def claim(
        self, tenant_id: str, run_id: str, *, owner: str, lease_seconds: float, steal: bool = False
    ) -> int:
        """Take the run's lease and return a new fencing token.

        Raises ``LeaseConflictError`` if another owner's lease is live, unless ``steal``: a
        stolen lease leaves the old holder with a stale token, so it can no longer write.
        """
        ...

    def release(self, tenant_id: str, run_id: str, token: int) -> None:
        """Give the lease up (no-op when ``token`` is stale)."""
        ...


class RunsSQL(QueueSQL):
    """``RunsContract`` over SQL (``SQLStore`` inherits it), with the queue its claims drain."""

    def create_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        incarnation: str | None = None,
        fingerprint: str = "",
        shape: str | None = None,
    ) -> RunRecord:
        with self._tx(tenant_id) as db:
            row = self._insert_run(
                db,
                tenant_id,
                run_id,
                graph_name,
                graph_version,
                durability,
                schema_version,
                subject=subject,
                classes=classes,
                incarnation=incarnation,
                identity=(fingerprint, shape),
            )
        return self._existing(tenant_id, run_id) if row is None else self._run(row)

    def enqueue(
        self,
        tenant_id: str,
        run_id: str,
        inbox: bytes,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        fingerprint: str = "",
        shape: str | None = None,
        engine: str = "wayline",
    ) -> RunRecord:
        """Hand a run input (a start or a resume decision) to whichever worker claims it."""
        with self._tx(tenant_id) as db:
            row = self.enqueue_in(
                db,
                tenant_id,
                run_id,
                inbox,
                graph_name=graph_name,
                graph_version=graph_version,
                durability=durability,
                schema_version=schema_version,
                subject=subject,
                classes=classes,
                identity=(fingerprint, shape),
                engine=engine,
            )
        return self._existing(tenant_id, run_id) if row is None else self._run(row)

    def enqueue_in(
        self,
        db: Executor,
        tenant_id: str,
        run_id: str,
        inbox: bytes,
        *,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str = "",
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        identity: tuple[str, str | None] = ("", None),
        engine: str = "wayline",
    ) -> Any:
        """``enqueue`` inside a transaction of the caller's (a schedule's fire commits the
        run's input with the tick it spends; the server, with the API run it records): the
        new row, or None when the run existed or runs on another ``engine`` (read it back)."""
        stored, crc_ = self.payloads.put(
            inbox_ident(tenant_id, run_id), tenant_id, f"{run_id}|n", inbox
        )
        row = self._insert_run(
            db,
            tenant_id,
            run_id,
            graph_name,
            graph_version,
            durability,
            schema_version,
            inbox=(stored, crc_),
            subject=subject,
            classes=classes,
            identity=identity,
        )
        if row is None:  # the run exists: its new input waits in its inbox
            now = time.time()
            db.execute(self.q.Q_SET_INBOX, (stored, crc_, now, now, tenant_id, run_id))
        db.execute(self.q.Q_PUT_METER, (tenant_id, run_id, -1, "runs", "inbox", len(stored)))
        if engine != "wayline":
            db.execute(self.q.Q_SET_ENGINE, (engine, tenant_id, run_id, engine))
            row = None  # read back with its engine
        self._notify(db, one=True)
        return row

    def _insert_run(
        self,
        db: Executor,
        tenant_id: str,
        run_id: str,
        graph_name: str,
        graph_version: str,
        durability: str,
        schema_version: str,
        *,
        inbox: tuple[bytes, int] | None = None,
        subject: str | None = None,
        classes: Mapping[str, str] | None = None,
        incarnation: str | None = None,
        lease: tuple[str, float] | None = None,
        identity: tuple[str, str | None] = ("", None),
    ) -> Any:
        """Insert the run row (a new incarnation) unless it exists: the new row, or None
        when the run existed. With ``lease`` (owner, seconds) the row is born claimed,
        fencing token 1."""
        now = time.time()
        stored, crc_ = inbox if inbox is not None else (None, None)
        held = (0, None, None) if lease is None else (1, lease[0], now + lease[1])
        row = (tenant_id, run_id, graph_name, graph_version, durability, *held, now, now, stored)
        params: tuple[Any, ...] = (
            *row,
            schema_version,
            crc_,
            incarnation or uuid.uuid4().hex,
            now,
            *identity,
        )
        q = self.q
        if subject is not None or classes:  # docs/data.md: two more columns
            params = (*params, subject, classes_json(classes))
            query = q.Q_CREATE_RUN_LABELLED
        else:
            query = q.Q_CREATE_RUN
        return db.execute(query, params).fetchone()

    def _existing(self, tenant_id: str, run_id: str) -> RunRecord:
        run = self.get_run(tenant_id, run_id)
        assert run is not None
        return run

    def wait_for_work(self, timeout: float) -> None:
        """Block until new work may be claimable or ``timeout`` passes."""
        self._work.wait(timeout)

    def wake_waiting(self) -> None:
        """End this process's waits for work now (a worker stopping: its idle slots need
        not sit out a long ``--poll``, which the stores' wake-ups make a sensible setting)."""
        self._work.notify()

    @property
    def _work(self) -> WorkSignal:
        signal = self.__dict__.get("_work_signal")
        if signal is None:
            signal = self.__dict__["_work_signal"] = WorkSignal()
        return signal

    def claim_next(
        self,
        *,
        owner: str,
        lease_seconds: float,
        graphs: Sequence[tuple[str, str, str]],
        tenant_id: str | None = None,
    ) -> tuple[RunRecord, int] | None:
        """Claim a claimable run of these (graph name, version, fingerprint) triples: first
        one abandoned by a worker whose lease expired (claimable at once: no sweeper, and no
        wait behind the queue), else the oldest new run or one waiting to resume or retry. A
        run of a version (or a shape) this worker lacks is left for one that has it. Returns
        the run and the new fencing token."""
        self._work.scanning()  # a notice from here on ends this slot's next wait
        if not graphs:
            return None
        now = time.time()
        query, times = self._claim_query(tuple(map(tuple, graphs)))
        params: list[Any] = []
        for (name, version, fingerprint), count in zip(
            (g for g in graphs for _ in self.q.Q_CLAIM_BRANCHES), times, strict=True
        ):
            params += [name, version, fingerprint, *[now] * count, tenant_id, tenant_id]
        with self._lease_tx(tenant_id) as db:
            # a stopped run's queued input goes into its inbox first: claimable below. Losing
            # this to a power cut (SQLite NORMAL) loses nothing: the input stays queued.
            self.promote_in(db, tenant_id, now)
            found = db.execute(query, params).fetchall()
            if not found:
                return None
            if len(found) > 1:  # more work than this claim: the next idle slot, not all
                self._work.notify(1)
            tenant, run_id, taken = found[0]
            take = (owner, now + lease_seconds, now, tenant, run_id)
            row = db.execute(self.q.Q_CLAIM_TAKE, take).fetchone()
        try:
            run = self._run(row)  # the whole row came back with the claim: no read after it
        except CorruptionError as exc:  # its queued input is damaged: visible, not retried
            token = int(dict(zip(self.q.RUN_COLUMN_NAMES, row, strict=True))["fencing_token"])
            self.note_error(tenant, run_id, token=token, error=str(exc), status="failed")
            self.release(tenant, run_id, token)
            self._work.notify(1)  # the work this slot was woken for may be still there
            raise
        if taken:  # from a holder whose lease expired: what follows is a recovery
            run = dataclasses.replace(run, taken_over=True)
        return run, run.fencing_token

    def next_expiry(
        self, *, graphs: Sequence[tuple[str, str, str]], tenant_id: str | None = None
    ) -> float | None:
        """When the first lease held on a run of these graphs runs out, or the first timer or
        expiry of one falls due (None: neither): an idle worker sleeps until then instead
        of a whole poll interval, so a timer fires within milliseconds of its time."""
        if not graphs:
            return None
        ph = self.placeholder
        clause = " OR ".join([f"(graph_name = {ph} AND graph_version = {ph})"] * len(graphs))
        pairs = [part for name, version, _ in graphs for part in (name, version)]
        query = self.q.Q_NEXT_EXPIRY.format(graphs=clause)
        now = time.time()
        rows = self._read(query, (*pairs, now, tenant_id, tenant_id), tenant=tenant_id)
        wakes = self._read(
            self.q.Q_NEXT_WAKE.format(graphs=clause),
            (*pairs, now, tenant_id, tenant_id, *pairs, tenant_id, tenant_id),
            tenant=tenant_id,
        )
        due = [float(r[0]) for r in (*rows, *wakes) if r[0] is not None]
        return min(due) if due else None

    claim_lock = ""
    """Row lock suffix of the claim query (PostgreSQL: FOR UPDATE SKIP LOCKED)."""
    claim_peek = 1
    """Candidates the claim query returns. SQLite: 2, so a claim that sees more work wakes
    one more idle slot (its starts wake one slot each, not every idle slot: with four slots
    and one client, each start woke three slots to scan and find nothing, under the write
    lock). PostgreSQL: 1, since ``SKIP LOCKED`` would lock the second row and hide it from
    the other workers' claims for the length of this one."""

    def _claim_query(self, graphs: tuple[tuple[str, ...], ...]) -> tuple[str, list[int]]:
        """The claim query for these graphs, built once a store (a worker claims with the
        same graphs every time: formatting it anew cost a claim ~5 us), and how many times
        each of its branches takes the current time as a parameter."""
        built: dict[Any, tuple[str, list[int]]] = self.__dict__.setdefault("_claim_queries", {})
        if graphs in built:
            return built[graphs]
        branches: list[str] = []
        times: list[int] = []
        for _ in graphs:
            for branch in self.q.Q_CLAIM_BRANCHES:
                sql = branch.format(lock=self.claim_lock, peek=self.claim_peek)
                branches.append(f"SELECT * FROM ({sql}) AS b{len(branches)}")
                times.append(branch.count(self.placeholder) - 5)
        joined = " UNION ALL ".join(branches)
        query = self.q.Q_CLAIM_CANDIDATE.format(branches=joined, peek=self.claim_peek)
        if len(built) < 64:  # a few graph sets a store; never an unbounded cache
            built[graphs] = query, times
        return query, times

    def heartbeat(
        self, tenant_id: str, run_id: str, *, token: int, owner: str, lease_seconds: float
    ) -> tuple[bool, bool]:
        """Extend a held lease. Returns (still held, cancellation requested)."""
        expires = time.time() + lease_seconds
        with self._lease_tx(tenant_id) as db:
            row = db.execute(
                self.q.Q_HEARTBEAT, (expires, tenant_id, run_id, token, owner)
            ).fetchone()
        return (row is not None, bool(row[0]) if row is not None else False)

    def request_cancel(self, tenant_id: str, run_id: str) -> bool:
        """Cancel a run: at once if no worker holds it, else at its holder's next step."""
        now = time.time()
        with self._tx(tenant_id) as db:
            cur = db.execute(self.q.Q_REQUEST_CANCEL, (now, now, tenant_id, run_id))
            if cur.rowcount == 1:
                self._announce(db, ((tenant_id, run_id),))
        if cur.rowcount == 1:
            observe.moved(((tenant_id, run_id),))  # cancelled at once if nobody held it
        return bool(cur.rowcount == 1)

    def schedule_retry(
        self, tenant_id: str, run_id: str, *, token: int, wake_at: float, error: str
    ) -> None:
        """Give a failed run back to the queue, claimable from ``wake_at`` (fenced)."""
        with self._tx(tenant_id) as db:
            params = (wake_at, wake_at, error, time.time(), tenant_id, run_id, token)
            if db.execute(self.q.Q_SCHEDULE_RETRY, params).rowcount != 1:
                raise LeaseLost(run_id, token)
            self._notify(db, one=True)
            self._announce(db, ((tenant_id, run_id),))
        observe.moved(((tenant_id, run_id),))

    def note_error(
        self,
        tenant_id: str,
        run_id: str,
        *,
        token: int,
        error: str,
        status: RunStatus | None = None,
    ) -> None:
        """Record an error beside a run (and optionally a new status), fenced; the run's
        committed step is never changed, so a run that could not be read stays reachable."""
        with self._tx(tenant_id) as db:
            params = (error, status, time.time(), tenant_id, run_id, token)
            if db.execute(self.q.Q_NOTE_ERROR, params).rowcount != 1:
                raise LeaseLost(run_id, token)
            self._announce(db, ((tenant_id, run_id),))
        observe.moved(((tenant_id, run_id),))

    def requeue(self, tenant_id: str, run_id: str) -> bool:
        """An operator puts a failed (dead-lettered) or parked run back in the queue."""
        with self._tx(tenant_id) as db:
            now = time.time()
            cur = db.execute(self.q.Q_REQUEUE, (now, now, tenant_id, run_id))
            if cur.rowcount == 1:
                self._notify(db, one=True)
            return cur.rowcount == 1

    def get_run(self, tenant_id: str, run_id: str) -> RunRecord | None:
        rows = self._read(self.q.Q_GET_RUN, (tenant_id, run_id), tenant=tenant_id)
        return self._run(rows[0]) if rows else None

    def run_progress(self, tenant_id: str, run_id: str) -> RunProgress | None:
        rows = self._read(self.q.Q_RUN_PROGRESS, (tenant_id, run_id), tenant=tenant_id)
        if not rows:
            return None
        status, step, error, token, waiting = rows[0]
        return RunProgress(status, int(step), error, int(token), bool(waiting))

    def list_runs(
        self,
        tenant_id: str,
        *,
        status: RunStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[RunRecord]:
        params = (tenant_id, status, status, limit, offset)
        return [self._listed(r) for r in self._read(self.q.Q_LIST_RUNS, params, tenant=tenant_id)]

    def run_ids_with_prefix(self, tenant_id: str, prefix: str, *, limit: int = 10) -> list[str]:
        if self.dialect == "sqlite" and prefix:  # BINARY collation: a range of the key
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            params: tuple[Any, ...] = (tenant_id, prefix, upper, len(prefix), prefix, limit)
            query = self.q.Q_RUN_IDS_IN_RANGE
        else:  # a collation may order a prefix's extensions apart: compare the prefix
            params, query = (tenant_id, len(prefix), prefix, limit), self.q.Q_RUN_IDS_WITH_PREFIX
        return [r[0] for r in self._read(query, params, tenant=tenant_id)]

    def _listed(self, row: Sequence[Any]) -> RunRecord:
        """A run for a listing. One whose row cannot be read is listed with why (as its
        error, its input and metadata left out), not allowed to hide every other run from
        the operator who has to find it."""
        try:
            return self._run(row)
        except CorruptionError as exc:
            r = dict(zip(self.q.RUN_COLUMN_NAMES, row, strict=True))
            del r["inbox"], r["inbox_crc"]
            r.update(inbox=None, next_nodes=(), classes={}, redacted={}, error=str(exc))
            r.update(attempts=int(r["attempts"]), cancel_requested=bool(r["cancel_requested"]))
            return RunRecord(**r)

    def _run(self, row: Sequence[Any]) -> RunRecord:
        """A run from its row, by column name; the inbox verified and opened."""
        r = dict(zip(self.q.RUN_COLUMN_NAMES, row, strict=True))
        tenant, run_id = r["tenant_id"], r["run_id"]
        inbox = self.payloads.get_opt(
            inbox_ident(tenant, run_id), tenant, f"{run_id}|n", r.pop("inbox"), r.pop("inbox_crc")
        )
        ident = ("runs", tenant, run_id)  # a damaged column fails a claim, not a slot
        r.update(
            inbox=inbox,
            next_nodes=json_column(ident, r["next_nodes"], "its next nodes", tuple),
            classes=json_column(ident, r["classes"] or "{}", "its classes", dict),
            redacted=json_column(ident, r["redacted"] or "{}", "its erasures", dict),
            attempts=int(r["attempts"]),
            cancel_requested=bool(r["cancel_requested"]),
        )
        return RunRecord(**r)

    # -- leases -----------------------------------------------------------------------

    def claim(
        self, tenant_id: str, run_id: str, *, owner: str, lease_seconds: float, steal: bool = False
    ) -> int:
        now = time.time()
        with self._lease_tx(tenant_id) as db:
            if not steal:  # whose lease it is matters only when it may not be taken
                row = db.execute(self.q.Q_LEASE_OF, (tenant_id, run_id)).fetchone()
                _, holder, expires = row if row is not None else (None, None, None)
                if holder not in (None, owner) and expires is not None and expires > now:
                    raise LeaseConflictError(
                        f"run {run_id!r} is leased to {holder!r} for another "
                        f"{expires - now:.1f}s; wait for the lease to expire or stop that worker"
                    )
            taken = db.execute(
                self.q.Q_TAKE_LEASE, (owner, now + lease_seconds, tenant_id, run_id)
            ).fetchone()
            if taken is None:
                raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
        return int(taken[0])

    def release(self, tenant_id: str, run_id: str, token: int) -> None:
        with self._lease_tx(tenant_id) as db:
            db.execute(self.q.Q_RELEASE, (tenant_id, run_id, token))
