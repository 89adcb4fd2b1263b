"""Workers: claim runnable runs, execute them under a lease, keep the lease alive.

Each slot claims the oldest claimable run of the graphs this worker serves; the claim
increments the run's fencing token, and every write the run makes is conditional on it, so
a worker that lost its lease (paused, partitioned, too slow to heartbeat) cannot write: it
gets ``LeaseLost`` and drops the run. A run whose holder died is claimable the moment its
lease expires; the claim query itself is the wake-up path, there is no sweeper.
"""

from __future__ import annotations

import dataclasses
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
    VersionMismatchError,
    WaylineError,
)
from wayline.graph.checkpoint import inbox_breakpoints, inbox_run_config, inbox_stream_modes
from wayline.graph.compiled import CompiledGraph
from wayline.graph.loop import RunLoop, default_owner
from wayline.ids import RunRef
from wayline.store import open_store
from wayline.store.base import Store
from wayline.store.group import GroupCommit
from wayline.store.records import RunRecord
from wayline.worker.affinity import check_cpus, pin_this_thread
from wayline.worker.emitted import ATTEMPT, EMITTED_MODES, EmitSink
from wayline.worker.placement import Placement

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
    cpus: AbstractSet[int] | Literal["auto"] | None = None
    """Run this worker's threads on these CPUs only (Linux; ``wayline.worker.affinity``):
    its slots hand the GIL to each other every step, which costs less CPU on one core than
    across several. ``"auto"``: on one CPU, the least busy, and another when others take
    it (``wayline.worker.placement``; what ``wayline worker`` does). None: wherever the OS
    schedules them (the default for a worker embedded in an application)."""

    @property
    def heartbeat_interval(self) -> float:
        return self.heartbeat_every or self.lease_seconds / 3


def served_graphs(
    graphs: Sequence[CompiledGraph], store: Store
) -> dict[tuple[str, str], CompiledGraph]:
    """The graphs a process serves, by name and version. Two graphs with the same name and
    version but different shapes (two modules that each declare ``class State``) are
    refused here: one of them would run the other's runs."""
    served: dict[tuple[str, str], CompiledGraph] = {}
    for g in graphs:
        other = served.get((g.name, g.version))
        if other is not None and other.fingerprint != g.fingerprint:
            raise GraphError(
                f"two graphs named {g.name}@{g.version} with different shapes (fingerprints "
                f"{other.fingerprint} and {g.fingerprint}): give each its own name with "
                "compile(name=...), or a version of its own with compile(version=...)"
            )
        served[(g.name, g.version)] = g.with_store(store)
    return served


def claim_keys(graphs: Iterable[CompiledGraph]) -> list[tuple[str, str, str]]:
    """What a process claims for its graphs: each one's name, version and fingerprint, and
    its name and version with '' (runs recorded before 0013, claimed as they were)."""
    keys = {(g.name, g.version, fp) for g in graphs for fp in (g.fingerprint, "")}
    return sorted(keys)


@dataclasses.dataclass
class _Held:
    run: RunRecord
    token: int
    stop: threading.Event
    loop: RunLoop | None = None


class Worker:
    """Runs the graphs it serves, for every run any client starts, until stopped."""

    def __init__(
        self,
        store: Store | str,
        graphs: CompiledGraph | Sequence[CompiledGraph],
        config: WorkerConfig | None = None,
        *,
        owner: str | None = None,
    ) -> None:
        self.store = open_store(store) if isinstance(store, str) else store
        graphs = [graphs] if isinstance(graphs, CompiledGraph) else list(graphs)
        self.graphs = served_graphs(graphs, self.store)
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
        self.group = GroupCommit(self.store)
        """Step commits of the runs this worker holds that are ready together share one
        transaction (``wayline.store.group``); ``group.stats`` counts commits per fsync."""
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = threading.Lock()
        self._rng = random.Random()

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
        slots = [
            self._thread(lambda: self._slot(max_runs), f"wayline-slot-{i}")
            for i in range(self.config.concurrency)
        ]
        for slot in slots:
            slot.start()
        keeper = None
        if self.config.data_policy is not None:
            keeper = self._thread(self._retention, "wayline-retention")
            keeper.start()
        for slot in slots:
            _join(slot)
        self.stopping.set()
        beat.join()
        if keeper is not None:
            keeper.join()
        if watcher is not None:
            watcher.join()

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

    def stop(self) -> None:
        """Graceful stop: claim nothing more; each held run stops at its next step boundary
        and its lease is released, so another worker continues it at once."""
        self.stopping.set()
        with self._lock:
            for held in self._held.values():
                held.stop.set()

    # -- claiming and running ---------------------------------------------------------

    def _slot(self, max_runs: int | None) -> None:
        while not self.stopping.is_set():
            if max_runs is not None and self.completed >= max_runs:
                self.stopping.set()
                return
            try:
                claimed = self.store.claim_next(
                    owner=self.owner,
                    lease_seconds=self.config.lease_seconds,
                    graphs=self.claims,
                    tenant_id=self.config.tenant,
                )
            except WaylineError as exc:  # a damaged run (left failed, with why) or the store
                log.error("claim failed: %s", exc)
                self.store.wait_for_work(self.config.poll_interval)
                continue
            if claimed is None:
                self.store.wait_for_work(self._idle_wait())
                continue
            self.execute(*claimed)

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
        sink: EmitSink | None = None
        try:
            graph = self.graphs[(run.graph_name, run.graph_version)]
            sink = _emit_sink(self.store, graph, run, token)
            queued = {} if run.inbox is None else inbox_run_config(graph.codec, run.inbox)
            loop = graph.open_loop(
                RunRef(run.tenant_id, run.run_id),
                **_run_config(RunRef(run.tenant_id, run.run_id), queued.get("config")),
                durability=run.durability,
                owner=self.owner,
                lease_seconds=self.config.lease_seconds,
                token=token,
                stop=held.stop,
                claimed_run=run,
                committer=self.group.commit if sink is None else sink.wrap(self.group.commit),
            )
            if queued.get("context") is not None:
                loop.invocation.context = queued["context"]
            if sink is not None:
                loop.invocation.emit = sink
                loop.invocation.chat_callbacks = _chat_stream(sink)
                sink.step_of = lambda: loop.step + 1
                sink.mark(run.step + 1)
        except Exception as exc:  # e.g. a durability mode this wayline does not know
            self._give_up(run, token, exc)
            self.store.release(run.tenant_id, run.run_id, token)
            with self._lock:
                self.completed += 1
            return
        held.loop = loop
        loop.step_events = False  # nothing reads them here (a traced graph turns them on)
        with self._lock:
            self._held[key] = held
            if self.stopping.is_set():
                held.stop.set()
        try:
            for _ in graph.run_loop(loop, None, breakpoints=_queued_breakpoints(graph, run)):
                pass
            if sink is not None:
                sink.close()  # emitted in a step that committed nothing after (an interrupt)
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
            unreadable = not loop.loaded or isinstance(exc, CorruptionError)
            self._retry_or_dead_letter(run, token, exc, unreadable=unreadable)
        finally:
            with self._lock:
                self._held.pop(key, None)
                self.completed += 1

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
            if not alive:
                log.warning("lease on run %s lost; it stops at its next write", h.run.run_id)
                h.stop.set()
            elif cancel and h.loop is not None:
                h.loop.cancelled = True
                h.stop.set()


def _emit_sink(store: Store, graph: CompiledGraph, run: RunRecord, token: int) -> EmitSink | None:
    """The sink recording what nodes emit, when the queued input asked for it (None: not)."""
    if run.inbox is not None:
        modes = inbox_stream_modes(graph.codec, run.inbox)
    else:  # taken over (or continued) after the input was consumed: what its claim asked
        mark = store.last_stream_event(run.tenant_id, run.run_id, ATTEMPT)
        modes = frozenset() if mark is None else frozenset(graph.codec.loads(mark.payload))
    if not modes & EMITTED_MODES:
        return None
    return EmitSink(store, graph.codec, run.tenant_id, run.run_id, token, modes)


def _chat_stream(sink: EmitSink) -> Any:
    """Chat-model tokens to ``sink``, through the mechanism ``stream_mode="messages"``
    uses in process (None: not asked, or no langchain-core, so no chat model to stream)."""
    if "messages" not in sink.modes:
        return None
    try:
        from wayline.interop.lc_stream import ChatStream
    except ImportError:
        return None
    return ChatStream(sink)


def _run_config(ref: RunRef, given: Any) -> dict[str, Any]:
    """``open_loop``'s config and step limit for a config queued with the input (an
    assistant's, with the run's over it): the run's own ids win over any it names."""
    if not isinstance(given, dict) or not given:
        return {}
    own = ref.config()
    configurable = {**(given.get("configurable") or {}), **own["configurable"]}
    out: dict[str, Any] = {"config": {**given, "configurable": configurable}}
    limit = given.get("recursion_limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        out["step_limit"] = limit
    return out


def _queued_breakpoints(
    graph: CompiledGraph, run: RunRecord
) -> tuple[frozenset[str], frozenset[str]] | None:
    """The ``interrupt_before``/``interrupt_after`` queued with the run's input (None: the
    graph's compiled-in ones). They hold for the invocation that takes this inbox."""
    given = None if run.inbox is None else inbox_breakpoints(graph.codec, run.inbox)
    return None if given is None else graph.breakpoints(*given)


SIGNAL_SLICE = 0.5
"""Seconds a waiting main thread sleeps at most before its signal handlers may run."""


def _join(thread: threading.Thread) -> None:
    """Wait for ``thread`` in slices. The kernel hands a process's SIGTERM to any thread,
    and one that lands on a slot leaves an untimed ``join`` of the main thread asleep, so
    its Python handler (a graceful stop) never ran: a worker sent a burst of stop signals
    never exited. A timed wait returns to the interpreter, which runs pending handlers."""
    while thread.is_alive():
        thread.join(SIGNAL_SLICE)
