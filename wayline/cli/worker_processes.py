"""How one ``wayline worker`` command spreads its slots over processes, where each process
runs, and the parent that supervises them.

Python runs one thread of a process at a time, so a worker whose graphs compute rather
than wait is bound by one core: on SQLite at ``--concurrency 8`` one process spends about
0.16 ms of CPU a step (the engine's own step is under a third of it) and the second core
idles (``bench/README.md``, "The worker command's processes").
``--processes auto`` (the default) gives a command on a SQLite file one process per CPU it
may use, as long as each gets ``SLOTS_A_PROCESS`` slots; ``--concurrency`` stays the
command's total, so a graph that calls a rate-limited model runs as many runs at once as it
was told. On PostgreSQL ``auto`` is one process (``AUTO_SPREADS``).
"""

from __future__ import annotations

import os
from typing import Any, Literal

from wayline.errors import ConfigError

__all__ = [
    "AUTO_SPREADS",
    "SLOTS_A_PROCESS",
    "Placed",
    "cpu_list",
    "place_workers",
    "process_count",
    "run_processes",
    "split_slots",
]

SLOTS_A_PROCESS = 4
"""``--processes auto`` starts another process only when each gets at least this many slots.
A process commits the ready steps of its own slots in one transaction (one fsync), and
processes take turns at the SQLite file: with fewer slots a process, each turn carries
fewer steps. On a 2-CPU machine (``bench/fleet.py``'s graph, 128 runs of 51 commits, three
alternated pairs): 8 slots ran 5,900-6,300 steps/s as two processes of 4 against
4,500-5,000 as one of 8, while 4 slots ran 3,700-4,400 as two of 2 and 3,100-4,300 as one
of 4: no gain worth a second process."""

AUTO_SPREADS = ("sqlite",)
"""The stores on which ``--processes auto`` starts more than one process. On PostgreSQL,
with the server on the same two cores, two processes of 4 slots ran 2,656-3,506 steps/s
against one of 8 at 3,446-3,822 (three alternated rounds, ``bench/fleet.py``'s graph): each
process groups only its own slots' steps (2.3 commits a transaction against 4.7), and the
server's work a transaction took what the second core gave. A worker machine apart from
the database may do better with ``--processes N``; that was not measured."""

Placed = frozenset[int] | int | Literal["auto"] | None
"""Where one worker process runs (``wayline.worker.affinity``): on fixed CPUs; placed on one
CPU that changes when others keep it busy (``wayline.worker.placement``), starting on the
CPU given (an int) or on the least busy (``"auto"``); or left to the OS (None)."""


def process_count(processes: str, concurrency: int, cpus: str, db: str) -> int:
    """The processes a command on the store ``db`` starts: ``--processes`` as given (at
    most one a slot), or for ``auto`` one a CPU that ``--cpus`` allows, each with
    ``SLOTS_A_PROCESS`` slots or more, on a SQLite file (one elsewhere: ``AUTO_SPREADS``).
    Checked before anything starts."""
    if processes != "auto":
        if not processes.isdigit() or int(processes) < 1:
            raise ConfigError(f"--processes {processes!r}: write a number of processes, or auto")
        count = int(processes)
        if count > concurrency:
            raise ConfigError(
                f"--processes {count} with --concurrency {concurrency}: --concurrency is the "
                f"runs the command executes at once, shared by its processes, and each "
                f"needs one; give --concurrency {count} or more"
            )
        return count
    if cpus.startswith("auto:"):  # a child of a command, placed by its parent
        return 1
    scheme, _, rest = db.partition("://")
    if scheme not in AUTO_SPREADS or rest.endswith(":memory:"):  # :memory: lives in one process
        return 1
    return max(1, min(_usable_cpus(cpus), concurrency // SLOTS_A_PROCESS))


def _usable_cpus(cpus: str) -> int:
    from wayline.worker.affinity import allowed_cpus, parse_cpus

    if cpus in ("auto", "all"):
        return len(allowed_cpus()) or os.cpu_count() or 1
    return len(parse_cpus(cpus))


def split_slots(concurrency: int, processes: int) -> list[int]:
    """Each process's ``--concurrency``: the command's slots shared out, the first processes
    taking one more when they do not divide evenly."""
    each, more = divmod(concurrency, processes)
    return [each + (i < more) for i in range(processes)]


def place_workers(cpus: str, processes: int) -> list[Placed]:
    """Where each worker process runs. ``auto`` places each of several processes, starting
    on an allowed CPU of its own, in turn (``auto:N``, what each is handed: starting on CPU
    N), and a lone process starting on the least busy CPU; a list pins, each of several
    processes to one CPU of it in turn. Checked here, once, before any process starts."""
    from wayline.worker.affinity import allowed_cpus, check_cpus, parse_cpus

    if cpus == "all":
        return [None] * processes
    if cpus.startswith("auto:") and processes == 1:
        first = cpus.removeprefix("auto:")
        if not first.isdigit():
            raise ConfigError(f"--cpus {cpus!r}: write auto:N with N a CPU number, or auto")
        (cpu,) = check_cpus({int(first)})
        return [cpu]
    if cpus == "auto":
        if processes == 1:
            return ["auto"]
        if not hasattr(os, "sched_setaffinity"):
            return [None] * processes
        ordered = allowed_cpus()
        if len(ordered) < 2:
            return [None] * processes  # nothing to spread them over
        return [ordered[i % len(ordered)] for i in range(processes)]
    chosen = parse_cpus(cpus)
    if processes == 1:
        return [chosen]
    ordered = sorted(chosen)
    return [frozenset({ordered[i % len(ordered)]}) for i in range(processes)]


def cpu_list(place: Placed) -> str:
    """A child process's ``--cpus``."""
    if place is None:
        return "all"
    if place == "auto":
        return place
    if isinstance(place, int):
        return f"auto:{place}"
    return ",".join(map(str, sorted(place)))


def run_processes(scope: str, each: list[list[str]]) -> int:
    """Run one ``wayline worker`` process per argument list in ``each`` until they stop;
    SIGTERM and SIGINT go to each (a graceful stop: held runs finish their step and are
    released), and one that fails stops the others, so the command never runs on with part
    of its workers. The exit code is that of the first to fail (0 when none did)."""
    import signal
    import subprocess
    import sys
    import threading

    from wayline.worker.worker import SIGNAL_SLICE

    command = [sys.executable, "-m", "wayline.cli.main", "--scope", scope, "worker"]
    children = [subprocess.Popen([*command, *args]) for args in each]
    exited = threading.Event()

    def forward(signum: int, _frame: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    def watch(child: subprocess.Popen[bytes]) -> None:
        child.wait()
        exited.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    for child in children:
        threading.Thread(target=watch, args=(child,), daemon=True).start()
    first_failure = 0
    while any(child.poll() is None for child in children):
        exited.wait(SIGNAL_SLICE)  # timed: a signal caught by a watcher thread still runs
        exited.clear()
        failed = [child.returncode for child in children if child.returncode]
        if failed and not first_failure:
            first_failure = abs(failed[0])
            forward(signal.SIGTERM, None)
    failed = [abs(child.returncode) for child in children if child.returncode]
    return first_failure or (failed[0] if failed else 0)
