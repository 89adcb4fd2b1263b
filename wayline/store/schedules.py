"""Schedules: a graph's input handed to a run at every tick of a cron expression.

Kept beside the ``Store`` protocol, as the server's tables are: only workers (which fire
them), the client's ``schedule`` and ``wayline crons`` need them. A tick is fired by a
worker serving the schedule's graph, in one transaction that locks the schedule's row,
queues the tick's run (``enqueue``, creating it or handing a thread its input) and moves
``next_at`` on, conditional on the tick still being the schedule's next. So a tick fires
once however many workers race for it, and a worker killed mid-fire leaves nothing of it:
the next worker fires that tick. The claim query of the schedule is its wake-up path, as
a run's is.

Catch-up policy: a schedule whose ticks passed while no worker ran fires **once** when a
worker next sees it (for its earliest missed tick, under that tick's run id), then
continues from the first tick after now; missed ticks are not replayed one by one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from wayline.errors import ConfigError
from wayline.store.payloads import json_column
from wayline.store.sql import schedule_queries, server_queries
from wayline.store.sql_core import Executor
from wayline.store.sql_store import SQLStore

__all__ = ["Fired", "ScheduleRecord", "Schedules", "next_tick", "schedules"]

log = logging.getLogger("wayline.schedules")

API_NAMESPACE = uuid.UUID("6f1c2a52-2f43-4c55-9a51-7f1d3b0c9e21")
"""Thread and API run ids of a server cron's ticks are uuid5 under this namespace, so a
tick's ids are the same in every process that fires it."""

FIRE_HOOK: Callable[[str, float], None] | None = None
"""Called inside a fire's transaction with (schedule id, tick): the crash tests kill a
worker there. None outside them."""


def _zone(timezone: str) -> ZoneInfo:
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            f"timezone {timezone!r} is not an IANA time zone: name one like 'UTC' or 'Europe/Paris'"
        ) from exc


def next_tick(cron: str, timezone: str, after: float) -> float:
    """The first tick of ``cron`` (read in ``timezone``) strictly after ``after``."""
    start = dt.datetime.fromtimestamp(after, _zone(timezone))
    try:
        return next(CronSim(cron, start)).timestamp()
    except (CronSimError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"{cron!r} is not a cron expression ({exc}): give five fields, minute hour "
            "day-of-month month day-of-week, such as '0 9 * * 1-5' (09:00 on weekdays)"
        ) from None


@dataclasses.dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """A schedule as stored. ``thread_id`` None: each tick starts a new run; else each tick
    hands that run (thread) new input. ``api``: what the server records for each tick's
    run (a cron made through the LangGraph API), None for a client's schedule.
    ``fingerprint``, ``shape``, ``engine``: the identity of the graph it was made for,
    recorded on every run a tick queues ('' for a schedule made before 0019)."""

    tenant_id: str
    schedule_id: str
    graph_name: str
    graph_version: str
    schema_version: str
    durability: str
    cron: str
    timezone: str
    thread_id: str | None
    inbox: bytes
    next_at: float | None
    enabled: bool
    end_at: float | None
    fires: int
    last_fired_at: float | None
    last_run_id: str | None
    api: dict[str, Any] | None
    metadata: dict[str, Any]
    created_at: float
    updated_at: float
    fingerprint: str = ""
    shape: str | None = None
    engine: str = "wayline"

    def run_for(self, tick: float) -> str:
        """The run (thread) id of a tick: derived, so every process computes the same."""
        if self.thread_id is not None:
            return self.thread_id
        if self.api is not None:
            return str(uuid.uuid5(API_NAMESPACE, f"{self.tenant_id}/{self.schedule_id}/{tick}"))
        at = dt.datetime.fromtimestamp(tick, dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        return f"{self.schedule_id}-{at}"


@dataclasses.dataclass(frozen=True, slots=True)
class Fired:
    """One tick fired: which schedule, its tick, the run it queued, the next tick."""

    tenant_id: str
    schedule_id: str
    tick: float
    run_id: str
    next_at: float | None


class Schedules:
    """The ``schedules`` rows of one SQL store."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store
        ph = store.placeholder
        names = {
            **{k: v for k, v in vars(server_queries).items() if k.startswith("Q_")},
            **{k: v for k, v in vars(schedule_queries).items() if k.startswith("Q_")},
        }
        self.q = SimpleNamespace(**{k: v.replace("?", ph) for k, v in names.items()})

    # -- rows -------------------------------------------------------------------------

    def _record(self, row: dict[str, Any]) -> ScheduleRecord:
        t, sid = row["tenant_id"], row["schedule_id"]
        ident = ("schedules", t, sid)
        inbox = self.store.payloads.get(
            (*ident, "inbox"), t, f"{sid}|c", row["inbox"], row["inbox_crc"]
        )
        api = None if row["api"] is None else json_column(ident, row["api"], "api", _mapping)
        return ScheduleRecord(
            tenant_id=t,
            schedule_id=sid,
            graph_name=row["graph_name"],
            graph_version=row["graph_version"],
            schema_version=row["schema_version"],
            durability=row["durability"],
            cron=row["cron"],
            timezone=row["timezone"],
            thread_id=row["thread_id"],
            inbox=inbox,
            next_at=None if row["next_at"] is None else float(row["next_at"]),
            enabled=bool(row["enabled"]),
            end_at=None if row["end_at"] is None else float(row["end_at"]),
            fires=int(row["fires"]),
            last_fired_at=None if row["last_fired_at"] is None else float(row["last_fired_at"]),
            last_run_id=row["last_run_id"],
            api=api,
            metadata=json_column(ident, row["metadata"], "metadata", _mapping),
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
            fingerprint=row["fingerprint"],
            shape=row["shape"],
            engine=row["engine"],
        )

    def _sealed(self, tenant_id: str, schedule_id: str, inbox: bytes) -> tuple[bytes, int]:
        ident = ("schedules", tenant_id, schedule_id, "inbox")
        return self.store.payloads.put(ident, tenant_id, f"{schedule_id}|c", inbox)

    def _rows(self, query: str, params: tuple[Any, ...], tenant: str | None) -> list[Any]:
        backend: Any = self.store  # both SQL backends read rows by name
        return [self._record(r) for r in backend._read_dicts(query, params, tenant)]

    # -- the API ----------------------------------------------------------------------

    def create(
        self,
        tenant_id: str,
        schedule_id: str,
        *,
        graph_name: str,
        graph_version: str,
        inbox: bytes,
        cron: str,
        timezone: str = "UTC",
        thread_id: str | None = None,
        durability: str = "sync",
        schema_version: str = "",
        enabled: bool = True,
        end_at: float | None = None,
        api: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        fingerprint: str = "",
        shape: str | None = None,
        engine: str = "wayline",
    ) -> ScheduleRecord:
        """Store a schedule (its first tick is the first after now); creating the same id
        twice returns the first one unchanged. ``fingerprint``, ``shape`` and ``engine``:
        the graph's identity, carried by every run a tick queues (so only a worker with
        that shape of the graph claims it)."""
        now = time.time()
        first = next_tick(cron, timezone, now)
        stored, crc = self._sealed(tenant_id, schedule_id, inbox)
        params = (
            tenant_id,
            schedule_id,
            graph_name,
            graph_version,
            schema_version,
            durability,
            cron,
            timezone,
            thread_id,
            stored,
            crc,
            first,
            1 if enabled else 0,
            end_at,
            None if api is None else json.dumps(api),
            json.dumps(metadata or {}),
            now,
            now,
            fingerprint,
            shape,
            engine,
        )
        with self.store._tx(tenant_id) as db:
            db.execute(self.q.Q_INSERT, params)
            self.store._notify(db)
        made = self.get(tenant_id, schedule_id)
        assert made is not None
        return made

    def get(self, tenant_id: str, schedule_id: str) -> ScheduleRecord | None:
        rows = self._rows(self.q.Q_GET, (tenant_id, schedule_id), tenant_id)
        return rows[0] if rows else None

    def search(
        self,
        tenant_id: str,
        *,
        graph_name: str | None = None,
        thread_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[ScheduleRecord]:
        params = (tenant_id, graph_name, graph_name, thread_id, thread_id, limit, offset)
        return self._rows(self.q.Q_LIST, params, tenant_id)

    def update(
        self,
        tenant_id: str,
        schedule_id: str,
        *,
        cron: str | None = None,
        timezone: str | None = None,
        enabled: bool | None = None,
        end_at: float | None = None,
        clear_end: bool = False,
        inbox: bytes | None = None,
        api: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ScheduleRecord | None:
        """Change a schedule (None: unchanged; ``clear_end`` drops its end). A new cron or
        time zone, or enabling it again, moves its next tick to the first after now."""
        old = self.get(tenant_id, schedule_id)
        if old is None:
            return None
        cron_, zone = cron or old.cron, timezone or old.timezone
        on = old.enabled if enabled is None else enabled
        next_at = old.next_at
        if cron is not None or timezone is not None or (on and not old.enabled):
            next_at = next_tick(cron_, zone, time.time())
        stored, crc = self._sealed(tenant_id, schedule_id, old.inbox if inbox is None else inbox)
        end = None if clear_end else (old.end_at if end_at is None else end_at)
        params = (
            cron_,
            zone,
            next_at,
            1 if on else 0,
            end,
            stored,
            crc,
            json.dumps(old.api if api is None else api) if (api or old.api) else None,
            json.dumps(old.metadata if metadata is None else metadata),
            time.time(),
            tenant_id,
            schedule_id,
        )
        with self.store._tx(tenant_id) as db:
            db.execute(self.q.Q_UPDATE, params)
            self.store._notify(db)
        return self.get(tenant_id, schedule_id)

    def delete(self, tenant_id: str, schedule_id: str) -> bool:
        with self.store._tx(tenant_id) as db:
            return int(db.execute(self.q.Q_DELETE, (tenant_id, schedule_id)).rowcount) == 1

    # -- firing (workers) -------------------------------------------------------------

    def fire_due(
        self,
        graphs: Sequence[tuple[str, str]],
        *,
        tenant_id: str | None = None,
        most: int = 100,
    ) -> list[Fired]:
        """Fire every due tick of these graphs' schedules (``most`` at a time), each in
        its own transaction; returns what was fired (by this process: another worker's
        fires are not in it)."""
        fired: list[Fired] = []
        for name, version in graphs:
            while len(fired) < most:
                one = self._fire_one(name, version, tenant_id)
                if one is None:
                    break
                fired.append(one)
        return fired

    def _fire_one(self, name: str, version: str, tenant_id: str | None) -> Fired | None:
        try:
            return self._fire_in_tx(name, version, tenant_id)
        except _AlreadyFired:
            return None

    def _fire_in_tx(self, name: str, version: str, tenant_id: str | None) -> Fired | None:
        query = self.q.Q_DUE.format(lock=self.store.claim_lock)
        with self.store._tx(tenant_id) as db:
            now = time.time()
            cur: Any = db.execute(query, (name, version, now, tenant_id, tenant_id))
            row = cur.fetchone()
            if row is None:
                return None
            names = [d[0] for d in cur.description]
            sched = self._record(dict(zip(names, row, strict=True)))
            self.store._rescope(db, sched.tenant_id)
            tick = sched.next_at
            assert tick is not None
            if FIRE_HOOK is not None:
                FIRE_HOOK(sched.schedule_id, tick)
            run_id = sched.run_for(tick)
            try:  # missed ticks collapse into this one fire (the catch-up policy)
                following: float | None = next_tick(sched.cron, sched.timezone, max(now, tick))
            except ConfigError as exc:  # stored before a change of cronsim: stop, say why
                log.error("schedule %s stopped: %s", sched.schedule_id, exc)
                following = None
            ended = following is None or (sched.end_at is not None and following > sched.end_at)
            self._queue(db, sched, run_id, tick, now)
            done = db.execute(
                self.q.Q_FIRED,
                (
                    None if ended else following,
                    0 if ended else 1,
                    now,
                    run_id,
                    now,
                    sched.tenant_id,
                    sched.schedule_id,
                    tick,
                ),
            )
            if int(done.rowcount) != 1:  # fired by another process meanwhile: roll back
                raise _AlreadyFired
        return Fired(sched.tenant_id, sched.schedule_id, tick, run_id, None if ended else following)

    def _queue(
        self, db: Executor, sched: ScheduleRecord, run_id: str, tick: float, now: float
    ) -> None:
        """The tick's run: its input queued, and what the server shows of it (a thread and
        an API run) for a cron made through the LangGraph API."""
        t = sched.tenant_id
        start_step = -1
        api_run = str(uuid.uuid5(API_NAMESPACE, f"{t}/{sched.schedule_id}/{tick}/run"))
        queued = False
        if sched.api is not None:
            row = db.execute(self.q.Q_RUN_STEP, (t, run_id)).fetchone()
            start_step = -1 if row is None else int(row[0])
            strategy = (sched.api.get("kwargs") or {}).get("multitask_strategy")
            if strategy == "enqueue" and row is not None:  # behind the thread's busy run
                busy = db.execute(self.q.Q_THREAD_BUSY, (t, run_id)).fetchone()
                queued = busy is not None and bool(busy[0])
        if queued:
            self.store.queue_in(db, t, run_id, sched.inbox, label=api_run)
            start_step = -2  # not started: the server reads where it starts from the queue
        else:
            self.store.enqueue_in(
                db,
                t,
                run_id,
                sched.inbox,
                graph_name=sched.graph_name,
                graph_version=sched.graph_version,
                durability=sched.durability,
                schema_version=sched.schema_version,
                identity=(sched.fingerprint, sched.shape),
            )
        if sched.engine != "wayline":  # a LangGraph graph's schedule: its runs say so
            db.execute(self.store.q.Q_SET_ENGINE, (sched.engine, t, run_id, sched.engine))
        api = sched.api
        if api is None:
            return
        thread_meta = json.dumps(api.get("thread_metadata") or {})
        db.execute(self.q.Q_INSERT_THREAD, (t, run_id, thread_meta, now, now))
        metadata = {**(api.get("metadata") or {}), "cron_id": sched.schedule_id}
        db.execute(
            self.q.Q_INSERT_RUN,
            (
                t,
                api_run,
                run_id,
                api["assistant_id"],
                "pending",
                start_step,
                json.dumps(metadata),
                json.dumps(api.get("kwargs") or {}),
                now,
                now,
            ),
        )

    def next_due(
        self, graphs: Sequence[tuple[str, str]], *, tenant_id: str | None = None
    ) -> float | None:
        """When the first schedule of these graphs is due (None: none enabled)."""
        if not graphs:
            return None
        ph = self.store.placeholder
        clause = " OR ".join([f"(graph_name = {ph} AND graph_version = {ph})"] * len(graphs))
        pairs = [part for pair in graphs for part in pair]
        query = self.q.Q_NEXT_DUE.format(graphs=clause)
        rows = self.store._read(query, (*pairs, tenant_id, tenant_id), tenant=tenant_id)
        return float(rows[0][0]) if rows and rows[0][0] is not None else None


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, found {type(value).__name__}")
    return value


class _AlreadyFired(Exception):
    """The tick was spent by another process between the read and the write."""


def schedules(store: Any) -> Schedules | None:
    """The schedules of a store (None: a store without SQL tables has none)."""
    return Schedules(store) if isinstance(store, SQLStore) else None
