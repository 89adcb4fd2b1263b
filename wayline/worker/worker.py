"""Workers: claim runnable runs, execute them under a lease, keep the lease alive.

Each slot claims the oldest claimable run of the graphs this worker serves; the claim
increments the run's fencing token, and every write the run makes is conditional on it, so
a worker that lost its lease (paused, partitioned, too slow to heartbeat) cannot write: it
gets ``LeaseLost`` and drops the run. A run whose holder died is claimable the moment its
lease expires; the claim query itself is the wake-up path, there is no sweeper.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Literal

from wayline.control.policy import DataPolicy, apply_policy
from wayline.effects.retry import RetryPolicy, retry_any
from wayline.errors import (
    CorruptionError,
    GraphError,
    LeaseLost,
    ReplayDivergenceError,
    ResumeError,
    RunParkedError,
    StoreError,
    VersionMismatchError,
    WaylineError,
)
from wayline.graph.checkpoint import inbox_webhook
from wayline.graph.compiled import CompiledGraph
from wayline.graph.loop import default_owner
from wayline.metrics_flush import MetricsFlusher, record_step_bytes
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.group import GroupCommit
from wayline.store.records import CommitBatch, RunRecord
from wayline.worker.affinity import check_cpus, pin_this_thread
from wayline.worker.engine import Engine, Execution, Lease
from wayline.worker.engines import engines_for
from wayline.worker.hub import HubCommit, greenlets, run_hub
from wayline.worker.notify import Committer, WebhookNotifier, notifying, send_loop
from wayline.worker.placement import Placement
from wayline.worker.ticker import tick_schedules

__all__ = ["Worker", "WorkerConfig", "claim_keys", "served_graphs"]

log = logging.getLogger("wayline.worker")

RUN_RETRY = RetryPolicy(max_attempts=3, initial_delay=1.0, max_delay=60.0, retry_on=retry_any)


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """How a worker claims and holds runs. Readable back from ``Worker.config``."""

    concurrency: int = 1
    lease_seconds: float = 30.0
    """A dead worker's runs are claimable this long after its last heartbeat."""
    heartbeat_every: float | None = None
    """Defaults to a third of the lease, so two heartbeats can be missed."""
    poll_interval: float = 1.0
    """Longest idle wait between claim attempts (PostgreSQL notifications cut it short)."""
    retry: RetryPolicy = RUN_RETRY
    """Run-level retries of a node error; then the run stays failed (dead letter)."""
    tenant: str | None = None
    """Serve one tenant only (None: every tenant)."""
    data_policy: DataPolicy | None = None
    """Retention by data class, applied when the worker starts and every ``policy_every``
    seconds (to ``tenant``, or every tenant). Idempotent: several workers may apply it."""
    policy_every: float = 3600.0
    memory_sweep_every: float | None = 60.0
    """Seconds between sweeps deleting expired long-term memory items (``wayline.memory``
    TTL; reads never return an expired item meanwhile). None: this worker does not sweep."""
    notifier: WebhookNotifier | None = None
    """Where to say that a run waits for an approval, ended, or parked on an effect
    (``wayline.worker.notify``: each notification an effect, sent once, retried)."""
    cpus: AbstractSet[int] | Literal["auto"] | None = None
    """Run this worker's threads on these CPUs only (Linux; ``wayline.worker.affinity``):
    its slots hand the GIL to each other every step, which costs less CPU on one core than
    across several. ``"auto"``: on one CPU, the least busy, and another when others take
    it (``wayline.worker.placement``; what ``wayline worker`` does). None: wherever the OS
    schedules them (the default for a worker embedded in an application)."""

    one_thread: bool = False
    """Drive every slot from one thread, each a greenlet that yields at its step commits
    (``wayline.worker.hub``): no GIL hand-offs between slots and every ready run in one
    transaction, but a node that blocks holds up the others. For graphs whose nodes compute
    or return quickly; needs ``greenlet`` (``wayline[one-thread]``)."""

    verify_rate: float = 0.0
    """Finished runs this worker verifies a minute, in turn (``wayline.worker.verifier``:
    the outcome a metric, what is wrong in the run's audit). 0: none."""
    metrics_every: float | None = 10.0
    """Seconds between flushes of this process's metrics to the store, where the dashboard's
    health page reads them (``wayline.metrics_flush``). None: kept in the process only."""

    @property
    def heartbeat_interval(self) -> float:
        return self.heartbeat_every or self.lease_seconds / 3


def served_graphs(graphs: Sequence[Engine], store: Store) -> dict[tuple[str, str], Engine]:
    """The graphs a process serves, by name and version. Two graphs with the same name and
    version but different shapes (two modules that each declare ``class State``) are
    refused here: one of them would run the other's runs."""
    served: dict[tuple[str, str], Engine] = {}
    for g in graphs:
        other = served.get((g.name, g.version))
        if other is not None and other.fingerprint != g.fingerprint:
            raise GraphError(
                f"two graphs named {g.name}@{g.version} with different shapes (fingerprints "
                f"{other.fingerprint} and {g.fingerprint}): give each its own name with "
                "compile(name=...), or a version of its own with compile(version=...)"
            )
        served[(g.name, g.version)] = g.bind(store)
    return served


def claim_keys(graphs: Iterable[Engine]) -> list[tuple[str, str, str]]:
    """What a process claims for its graphs: each one's name, version and fingerprint, and
    its name and version with '' (runs recorded before 0013, claimed as they were)."""
    keys = {(g.name, g.version, fp) for g in graphs for fp in (g.fingerprint, "")}
    return sorted(keys)


@dataclasses.dataclass
class _Held:
    run: RunRecord
    token: int
    stop: threading.Event
    execution: Execution | None = None


class Worker:
    """Runs the graphs it serves, for every run any client starts, until stopped.

    ``graphs``: wayline graphs, LangGraph graphs (``CompiledStateGraph``, ``@entrypoint``:
    run by LangGraph's own engine on ``WaylineSaver``), or ``Engine``s; the worker sees only
    the engine seam (``wayline.worker.engine``)."""

    def __init__(
        self,
        store: Store | str,
        graphs: Any,
        config: WorkerConfig | None = None,
        *,
        owner: str | None = None,
    ) -> None:
        self.store = open_store(store) if isinstance(store, str) else store
        self.graphs = served_graphs(engines_for(graphs), self.store)
        """Versions side by side: each run continues on the version that wrote it."""
        self.claims = claim_keys(self.graphs.values())
        """(name, version, fingerprint) of each graph served, and (name, version, '') for
        its runs written before fingerprints were recorded."""
        self.config = config or WorkerConfig()
        self.placement: Placement | None = None
        """Where the threads run under ``cpus="auto"`` (None: fixed CPUs, or none)."""
        if self.config.cpus == "auto":
            self.placement = Placement() if Placement.available() else None
        elif self.config.cpus is not None:
            check_cpus(self.config.cpus)  # refused here, not in a thread that cannot say so
        self.owner = owner or default_owner()
        self.stopping = threading.Event()
        self.completed = 0
        if self.config.one_thread:
            greenlets()  # a missing package refused here, not in the hub's thread
        self.group = HubCommit(self.store) if self.config.one_thread else GroupCommit(self.store)
        """Step commits of the runs this worker holds that are ready together share one
        transaction (``wayline.store.group``, ``wayline.worker.hub``); ``group.stats``
        counts commits per fsync."""
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = threading.Lock()
        self._rng = random.Random()
        self._notify = threading.Event()
        """Set when a commit wrote a notification: the sender sends it at once."""
        self.metrics = _flusher(self.store, self.config.metrics_every)
        """Flushes the process's metrics to the store (None: not an SQL store, or off)."""

    # -- lifecycle --------------------------------------------------------------------

    def run(self, *, max_runs: int | None = None) -> None:
        """Serve until ``stop()`` (or ``max_runs`` runs were executed)."""
        watcher = None
        if self.placement is not None:
            self.placement.start()
            watcher = threading.Thread(
                target=self.placement.watch,
                args=(self.stopping,),
                name="wayline-placement",
                daemon=True,
            )
            watcher.start()
        beat = self._thread(self._heartbeats, "wayline-heartbeat", daemon=True)
        beat.start()
        if self.config.one_thread:
            hub = functools.partial(run_hub, self, max_runs, self._claimed, self._idle_wait)
            slots = [self._thread(hub, "wayline-hub")]
        else:
            slots = [
                self._thread(lambda: self._slot(max_runs), f"wayline-slot-{i}")
                for i in range(self.config.concurrency)
            ]
        for slot in slots:
            slot.start()
        ticker = self._thread(self._tick, "wayline-schedules", daemon=True)
        ticker.start()
        sender = None
        if self.config.notifier is not None:
            sender = self._thread(self._send, "wayline-notify", daemon=True)
            sender.start()
        keeper = None
        if self.config.data_policy is not None:
            keeper = self._thread(self._retention, "wayline-retention")
            keeper.start()
        sweeper = None
        if self.config.memory_sweep_every is not None:
            sweeper = self._thread(self._sweep_memory, "wayline-memory-sweep", daemon=True)
            sweeper.start()
        watchers = self._observers()
        for slot in slots:
            _join(slot)
        self.stopping.set()
        beat.join()
        ticker.join()
        if sender is not None:
            self._notify.set()
            sender.join()
        if keeper is not None:
            keeper.join()
        if watcher is not None:
            watcher.join()
        for thread in watchers:
            thread.join()

    def _observers(self) -> list[threading.Thread]:
        """The metrics flusher and the scheduled verifier, when configured, started."""
        threads = []
        if self.metrics is not None:
            flush = functools.partial(self.metrics.loop, self.stopping)
            threads.append(self._thread(flush, "wayline-metrics", daemon=True))
        if self.config.verify_rate > 0:
            from wayline.worker.verifier import Verifier, verifiable

            verifier = Verifier(
                self.store, verifiable(self.graphs), actor=self.owner, tenant=self.config.tenant
            )
            check = functools.partial(verifier.loop, self.config.verify_rate, self.stopping)
            threads.append(self._thread(check, "wayline-verify", daemon=True))
        for thread in threads:
            thread.start()
        return threads

    def _thread(
        self, target: Callable[[], None], name: str, *, daemon: bool = False
    ) -> threading.Thread:
        """One of this worker's threads, on ``config.cpus`` when set (the caller's threads
        keep theirs)."""
        cpus, placement = self.config.cpus, self.placement

        def body() -> None:
            if placement is not None:
                placement.enter()
                try:
                    target()
                finally:
                    placement.leave()
                return
            if cpus is not None and cpus != "auto":
                pin_this_thread(cpus)
            target()

        return threading.Thread(target=body, name=name, daemon=daemon)

    def _retention(self) -> None:
        """Apply the data policy now and every ``policy_every`` seconds until stopped."""
        policy = self.config.data_policy
        assert policy is not None
        while not self.stopping.is_set():
            try:
                done = apply_policy(self.store, policy, tenant_id=self.config.tenant)
                for failed in (a for a in done if a["action"] == "failed"):
                    log.error("retention skipped run %s: %s", failed["run_id"], failed["error"])
                acted = sum(a["action"] != "failed" for a in done)
                if acted:
                    log.info("retention: %d run(s) redacted or purged", acted)
            except WaylineError as exc:
                log.error("retention failed: %s", exc)
            if self.stopping.wait(self.config.policy_every):
                return

    def _sweep_memory(self) -> None:
        """Delete expired memory items now and every ``memory_sweep_every`` seconds."""
        every = self.config.memory_sweep_every
        assert every is not None
        while not self.stopping.is_set():
            try:
                swept = self.store.memory_sweep()
                if swept:
                    log.info("memory: %d expired item(s) deleted", swept)
            except WaylineError as exc:
                log.error("memory sweep failed: %s", exc)
            if self.stopping.wait(every):
                return

    def _tick(self) -> None:
        """Fire the schedules of the graphs served here (``wayline.worker.ticker``)."""
        tick_schedules(
            self.store,
            sorted(self.graphs),
            tenant_id=self.config.tenant,
            stopping=self.stopping,
            poll_interval=self.config.poll_interval,
        )

    def _send(self) -> None:
        """Deliver the notifications the store holds (``wayline.worker.notify``)."""
        assert self.config.notifier is not None
        send_loop(
            self.store,
            self.config.notifier,
            tenant_id=self.config.tenant,
            stopping=self.stopping,
            wake=self._notify,
            poll_interval=self.config.poll_interval,
        )

    def stop(self) -> None:
        """Graceful stop: claim nothing more; each held run stops at its next step boundary
        and its lease is released, so another worker continues it at once."""
        self.stopping.set()
        with self._lock:
            for held in self._held.values():
                held.stop.set()
        self.store.wake_waiting()  # idle slots go now, not at their next poll

    # -- claiming and running ---------------------------------------------------------

    def _slot(self, max_runs: int | None) -> None:
        while not self.stopping.is_set():
            if max_runs is not None and self.completed >= max_runs:
                self.stopping.set()
                return
            claimed = self._claim()
            if isinstance(claimed, WaylineError):
                self.store.wait_for_work(self.config.poll_interval)
                continue
            if claimed is None:
                self.store.wait_for_work(self._idle_wait())
                continue
            self.execute(*claimed)

    def _claim(self) -> tuple[RunRecord, int] | WaylineError | None:
        """One claim: a run and its fencing token, None (nothing to claim), or the error."""
        try:
            return self.store.claim_next(
                owner=self.owner,
                lease_seconds=self.config.lease_seconds,
                graphs=self.claims,
                tenant_id=self.config.tenant,
            )
        except WaylineError as exc:  # a damaged run (left failed, with why) or the store
            log.error("claim failed: %s", exc)
            return exc

    def _claimed(self) -> tuple[RunRecord, int] | None:
        """A claim for the hub (``wayline.worker.hub``): an error is logged, then idle."""
        claimed = self._claim()
        return None if isinstance(claimed, WaylineError) else claimed

    def _idle_wait(self) -> float:
        """Poll no later than the moment another worker's lease runs out, so a dead
        worker's run is taken over within milliseconds of its expiry, not a poll later."""
        expiry = self.store.next_expiry(graphs=self.claims, tenant_id=self.config.tenant)
        if expiry is None:
            return self.config.poll_interval
        return max(0.005, min(self.config.poll_interval, expiry - time.time() + 0.005))

    def execute(self, run: RunRecord, token: int) -> None:
        """Run a claimed run until it finishes, waits, parks, fails or loses its lease.
        Every path out releases the lease and leaves the run in a state that says why, so
        no run is claimed again and again without progress."""
        held = _Held(run, token, threading.Event())
        key = (run.tenant_id, run.run_id)
        try:
            engine = self.graphs[(run.graph_name, run.graph_version)]
            lease = Lease(
                owner=self.owner,
                lease_seconds=self.config.lease_seconds,
                token=token,
                stop=held.stop,
                committer=self._committer(engine, run),
            )
            execution = engine.open(run, lease)
        except Exception as exc:  # e.g. a durability mode this wayline does not know
            self._give_up(run, token, exc)
            self.store.release(run.tenant_id, run.run_id, token)
            with self._lock:
                self.completed += 1
            return
        held.execution = execution
        with self._lock:
            self._held[key] = held
            if self.stopping.is_set():
                held.stop.set()
        try:
            if execution.run() == "done" and self.metrics is not None:
                self.metrics.run_finished(run, execution.final_step)  # ratio: off this slot
        except RunParkedError as exc:
            log.warning("run %s: %s", run.run_id, exc)
        except ResumeError as exc:  # the input it was handed was refused and consumed
            log.warning("run %s: %s", run.run_id, exc)
        except VersionMismatchError as exc:  # this code cannot continue it: an operator must
            self._give_up(run, token, exc)
        except ReplayDivergenceError as exc:  # failed and audited where it was found
            log.error("run %s: %s", run.run_id, exc)
        except LeaseLost as exc:
            log.warning("%s", exc)
        except Exception as exc:
            unreadable = not execution.loaded or isinstance(exc, CorruptionError)
            self._retry_or_dead_letter(run, token, exc, unreadable=unreadable)
        finally:
            with self._lock:
                self._held.pop(key, None)
                self.completed += 1

    def _committer(self, engine: Engine, run: RunRecord) -> Committer:
        """The run's commits: the worker's group commit, and with a notifier the intents of
        the notifications a commit's status change calls for, in that same commit."""
        commit: Committer = metered(self.group.commit, run)
        if self.config.notifier is not None:  # intents in the commit that moves the run
            graph = getattr(engine, "graph", None)
            hook = None
            queued_webhook = getattr(engine, "queued_webhook", None)
            if callable(queued_webhook):  # an engine whose checkpoints keep it (LangGraph's)
                hook = queued_webhook(run)
            elif run.inbox is not None and isinstance(graph, CompiledGraph):
                hook = inbox_webhook(graph.codec, run.inbox)
            everything = self.config.notifier.url is not None
            commit = notifying(
                commit,
                self.store,
                run,
                self._notify,
                everything=everything,
                webhook=hook,
                with_inbox=not callable(queued_webhook),
            )
        return commit

    def _give_up(self, run: RunRecord, token: int, exc: Exception) -> None:
        """Leave the run failed, with the reason, at the step it had committed; an operator
        fixes the cause and re-queues it (``wayline runs retry``)."""
        reason = f"{type(exc).__name__}: {exc}"
        log.error("run %s cannot continue here: %s", run.run_id, reason)
        try:
            self.store.note_error(
                run.tenant_id, run.run_id, token=token, error=reason, status="failed"
            )
        except LeaseLost:
            log.warning("run %s: lease lost before its failure could be recorded", run.run_id)

    def _retry_or_dead_letter(
        self, run: RunRecord, token: int, exc: Exception, *, unreadable: bool = False
    ) -> None:
        current = self.store.get_run(run.tenant_id, run.run_id)
        attempts = (current.attempts if current else run.attempts) + 1
        reason = f"{type(exc).__name__}: {exc}"
        if not self.config.retry.should_retry(attempts, exc, retry_any):
            if unreadable:  # nothing recorded a status: the run's step and state are intact
                self._give_up(run, token, exc)
            else:
                log.error(
                    "run %s failed for good after %d attempts: %s", run.run_id, attempts, reason
                )
            return  # the loop recorded status failed with the reason: the dead letter
        wake_at = time.time() + self.config.retry.delay(attempts, self._rng)
        try:
            self.store.schedule_retry(
                run.tenant_id, run.run_id, token=token, wake_at=wake_at, error=reason
            )
        except LeaseLost:
            log.warning("run %s: lease lost before its retry could be scheduled", run.run_id)

    # -- leases -----------------------------------------------------------------------

    def _heartbeats(self) -> None:
        while not self.stopping.wait(self.config.heartbeat_interval):
            self.beat()
        self.beat()

    def beat(self) -> None:
        """Extend every held lease once; stop runs whose lease is gone or are cancelled."""
        with self._lock:
            held = list(self._held.values())
        for h in held:
            try:
                alive, cancel = self.store.heartbeat(
                    h.run.tenant_id,
                    h.run.run_id,
                    token=h.token,
                    owner=self.owner,
                    lease_seconds=self.config.lease_seconds,
                )
            except Exception as exc:  # the store is away: the lease may lapse; fencing holds
                log.warning("heartbeat for run %s failed: %s", h.run.run_id, exc)
                continue
            loop = getattr(h.execution, "loop", None)  # wayline's loop; else the engine's own
            closed = loop.closed if loop is not None else getattr(h.execution, "closed", False)
            if not alive and closed:
                continue  # it suspended or ended and gave its lease up: not a loss
            if not alive:
                with self._lock:  # not a loss if the run ended (and let go) meanwhile
                    ended = self._held.get((h.run.tenant_id, h.run.run_id)) is not h
                if not ended:
                    log.warning("lease on run %s lost; it stops at its next write", h.run.run_id)
                h.stop.set()
            elif cancel and h.execution is not None:
                h.execution.cancel()
                h.stop.set()


SIGNAL_SLICE = 0.5
"""Seconds a waiting main thread sleeps at most before its signal handlers may run."""


def metered(commit: Committer, run: RunRecord) -> Committer:
    """``commit``, recording what each committed batch wrote per step, table and data class
    (``wayline.step.bytes``)."""
    graph, tenant, classes = run.graph_name, run.tenant_id, run.classes

    def committed(tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        commit(tenant_id, run_id, token, batch)
        record_step_bytes(graph, tenant, classes, batch)

    return committed


def _flusher(store: Store, every: float | None) -> MetricsFlusher | None:
    if every is None:
        return None
    try:
        return MetricsFlusher(store, every=every)
    except StoreError:  # not an SQL store: the metrics stay in the process
        return None


def _join(thread: threading.Thread) -> None:
    """Wait for ``thread`` in slices. The kernel hands a process's SIGTERM to any thread,
    and one that lands on a slot leaves an untimed ``join`` of the main thread asleep, so
    its Python handler (a graceful stop) never ran: a worker sent a burst of stop signals
    never exited. A timed wait returns to the interpreter, which runs pending handlers."""
    while thread.is_alive():
        thread.join(SIGNAL_SLICE)
