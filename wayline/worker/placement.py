"""A lone worker process on one CPU: the least busy when it starts, another when others
take that one.

A worker's slots run Python one at a time (the GIL), so a process gains nothing from a
second core for its own Python, and loses when the OS spreads its threads: every step hands
the GIL to another thread, and a hand-off to a thread asleep on another core moves the
interpreter's working set between caches and wakes that core (an interrupt, and on a
virtual machine an exit to the hypervisor). ``python bench/fleet.py --only sqlite`` (2
vCPUs, SQLite, sync): one worker at concurrency 8 ran 6,230 steps/s with its threads left
to the OS and 8,295 on one CPU.

A fixed CPU is a guess about the neighbours: a lone process cannot know which CPUs other
workers took (started on their own, or in other containers on the same CPUs), and two on
one CPU would share it while another sits idle. So ``Placement`` looks instead. It starts
on the CPU that was least busy over a short sample of ``/proc/stat``, and every few seconds
(at a random moment, so two processes do not decide in step) it samples again: when others
keep its CPU busier than another allowed CPU by ``MOVE_MARGIN`` of a CPU, it moves its
threads there. Its own threads' CPU time is taken out of the count, so a busy worker alone
on its CPU stays where it is.

Linux only (``/proc/stat``, ``os.sched_setaffinity`` on thread ids); elsewhere, or with one
allowed CPU, there is nothing to place and the threads are left to the OS.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from wayline.worker.affinity import allowed_cpus, pin_this_thread

__all__ = [
    "MOVE_MARGIN",
    "CpuTimes",
    "Placement",
    "better_cpu",
    "busy_shares",
    "least_busy",
    "place_process",
    "read_cpu_times",
]

log = logging.getLogger("wayline.worker")

CpuTimes = dict[int, tuple[int, int]]
"""CPU -> (busy, total) clock ticks since boot, as ``/proc/stat`` counts them."""

MOVE_MARGIN = 0.25
"""How much busier (in CPUs) others must keep this CPU than the least busy other one before
the threads move: a margin, so noise and a neighbour's short burst do not move them."""

PROC_STAT = Path("/proc/stat")
_IDLE_FIELDS = (3, 4)  # idle, iowait: the rest (user ... steal) is time the CPU was taken


def read_cpu_times(text: str) -> CpuTimes:
    """The per-CPU lines of ``/proc/stat`` (``cpuN user nice system idle iowait irq softirq
    steal ...``); guest time is already inside user, so it is not added again."""
    times: CpuTimes = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        ticks = [int(x) for x in rest.split()[:8]]
        idle = sum(ticks[i] for i in _IDLE_FIELDS if i < len(ticks))
        total = sum(ticks)
        times[int(name[3:])] = (total - idle, total)
    return times


def busy_shares(before: CpuTimes, after: CpuTimes, cpus: Iterable[int]) -> dict[int, float]:
    """The share of each CPU (0 to 1) that was busy between two readings."""
    shares = {}
    for cpu in cpus:
        if cpu not in before or cpu not in after:
            continue
        busy = after[cpu][0] - before[cpu][0]
        total = after[cpu][1] - before[cpu][1]
        shares[cpu] = busy / total if total > 0 else 0.0
    return shares


def better_cpu(
    current: int, busy: Mapping[int, float], ours: float, margin: float = MOVE_MARGIN
) -> int | None:
    """The CPU to move to, or None to stay: where others keep ``current`` busier (its busy
    share less ``ours``, this process's own share of it) than the least busy other CPU by
    more than ``margin``."""
    others_here = max(0.0, busy.get(current, 0.0) - ours)
    elsewhere = [cpu for cpu in busy if cpu != current]
    if not elsewhere:
        return None
    best = min(elsewhere, key=lambda cpu: busy[cpu])
    return best if others_here - busy[best] > margin else None


def least_busy(busy: Mapping[int, float], rng: random.Random, tolerance: float = 0.1) -> int:
    """One of the least busy CPUs, at random among those within ``tolerance`` of the least:
    two processes starting together on an idle machine need not both take the first."""
    low = min(busy.values())
    return rng.choice(sorted(cpu for cpu, share in busy.items() if share - low <= tolerance))


class Placement:
    """Where one worker's threads run, and the check that moves them (``watch``)."""

    def __init__(
        self,
        *,
        window: float = 0.5,
        every: float = 5.0,
        rng: random.Random | None = None,
        read: Callable[[], str] | None = None,
    ) -> None:
        self.window = window
        """Seconds each sample of the CPUs' load spans."""
        self.every = every
        """Mean seconds between checks (each drawn at random within half of it either way)."""
        self.cpus = allowed_cpus()
        self.cpu: int | None = None
        """Where the threads run now (None until ``start``)."""
        self.moves = 0
        self._rng = rng or random.Random()
        self._read = read or PROC_STAT.read_text
        self._threads: dict[int, tuple[int, int]] = {}
        """Python thread id -> (native id, CPU clock id), of the threads placed here."""
        self.whole_process = False
        """The process is this worker alone (``take_process``)."""
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """Whether there is anything to place: Linux, with two or more allowed CPUs."""
        return (
            hasattr(os, "sched_setaffinity")
            and hasattr(time, "pthread_getcpuclockid")
            and PROC_STAT.exists()
            and len(allowed_cpus()) > 1
        )

    def start(self, at: int | None = None) -> int:
        """Choose the CPU to start on: ``at`` when it is one this process may use (a CPU
        handed out by ``wayline worker --processes``, one to each process), else the
        least busy over a short sample (a fifth of a window: the worker's start waits)."""
        if self.cpu is not None:  # once: the CPU chosen stays until a check moves it
            return self.cpu
        if at in self.cpus:
            self.cpu = at
            return at
        busy, _ = self._sample(self.window / 5)
        self.cpu = least_busy(busy or {cpu: 0.0 for cpu in self.cpus}, self._rng)
        return self.cpu

    def enter(self) -> None:
        """Place the calling thread (until ``leave``); it moves with the others."""
        assert self.cpu is not None, "start() chooses the CPU first"
        me = threading.get_ident()
        with self._lock:
            try:
                pin_this_thread({self.cpu})
            except OSError as exc:  # the CPU was taken from this process since (a cpuset)
                log.warning("worker thread left to the OS: CPU %d refused it: %s", self.cpu, exc)
                return
            self._threads[me] = (threading.get_native_id(), time.pthread_getcpuclockid(me))

    def take_process(self) -> None:
        """Place the calling thread, and treat the whole process as the worker's (the
        ``wayline worker`` command): a move takes every thread still on the CPU it leaves,
        the threads nodes started (they begin on their starter's CPU) included, and the
        process's CPU time is what counts as its own. A ``Worker`` embedded in an
        application moves only its own threads, as the application's may be pinned there
        on purpose."""
        self.whole_process = True
        self.enter()

    def leave(self) -> None:
        with self._lock:
            self._threads.pop(threading.get_ident(), None)

    def check(self) -> int | None:
        """Sample the CPUs' load for one window and move if others keep this CPU busy while
        another is freer; the CPU moved to, or None."""
        busy, ours = self._sample(self.window)
        if self.cpu is None or not busy:
            return None
        target = better_cpu(self.cpu, busy, ours)
        if target is not None:
            log.info(
                "worker threads move from CPU %d (%.0f%% busy, %.0f%% of it theirs) to CPU "
                "%d (%.0f%% busy)",
                self.cpu,
                busy[self.cpu] * 100,
                ours * 100,
                target,
                busy[target] * 100,
            )
            self.move(target)
        return target

    def move(self, cpu: int) -> None:
        with self._lock:
            leaving, self.cpu = self.cpu, cpu
            self.moves += 1
            movers = {native_id for native_id, _ in self._threads.values()}
            if self.whole_process and leaving is not None:
                movers.update(_threads_on(leaving))
            for native_id in sorted(movers):
                try:
                    os.sched_setaffinity(native_id, {cpu})
                except ProcessLookupError:  # it ended without leaving
                    pass
                except OSError as exc:  # the CPU was taken from this process meanwhile
                    log.warning("worker thread %d stays: CPU %d refused: %s", native_id, cpu, exc)

    def watch(self, stopping: threading.Event) -> None:
        """Check at random moments, ``every`` seconds apart on average, until ``stopping``."""
        while not stopping.wait(self.every * self._rng.uniform(0.5, 1.5)):
            try:
                self.check()
            except OSError as exc:  # /proc unreadable now: stay where we are
                log.warning("worker placement check failed, threads stay: %s", exc)

    def _sample(self, span: float) -> tuple[dict[int, float], float]:
        """Each allowed CPU's busy share over ``span`` seconds, and the placed threads'
        share of one CPU over the same span."""
        before, mine = read_cpu_times(self._read()), self._cpu_times()
        time.sleep(span)  # the sample's span, on the calling (starting or watching) thread
        after, mine_after = read_cpu_times(self._read()), self._cpu_times()
        used = sum(t - mine[c] for c, t in mine_after.items() if c in mine)
        return busy_shares(before, after, self.cpus), max(0.0, used / span)

    def _cpu_times(self) -> dict[int, float]:
        """CPU clock id -> CPU seconds, of each placed thread (one that ended: left out),
        or of the process when it is the worker's."""
        if self.whole_process:
            clock = time.CLOCK_PROCESS_CPUTIME_ID
            return {clock: time.clock_gettime(clock)}
        with self._lock:
            clocks = [clock for _, clock in self._threads.values()]
        times = {}
        for clock in clocks:
            with contextlib.suppress(OSError):
                times[clock] = time.clock_gettime(clock)
        return times


def _threads_on(cpu: int) -> list[int]:
    """Native ids of this process's threads allowed on ``cpu`` alone."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError, ValueError):  # ended meanwhile
            if os.sched_getaffinity(int(task.name)) == {cpu}:
                found.append(int(task.name))
    return found


def place_process(stopping: threading.Event) -> Placement | None:
    """Place the calling process whole, on the least busy CPU, and watch it from a thread
    of its own until ``stopping``: for a command whose process runs one worker among other
    work (``wayline serve``: its HTTP loop, its in-process workers). None where there is
    nothing to place."""
    if not Placement.available():
        return None
    placement = Placement()
    placement.start()
    placement.take_process()
    watcher = threading.Thread(
        target=placement.watch, args=(stopping,), name="wayline-placement", daemon=True
    )
    watcher.start()
    return placement
