"""Which CPUs a worker's threads run on.

A worker's slots are Python threads: one runs Python at a time (the GIL), and every step
hands the GIL between them (a run waits for its commit, another runs its node). When the OS
spreads those threads over several cores, each hand-off moves the interpreter's working set
from one core's cache to another's, and the same work costs more CPU. Measured on the
2-vCPU dev machine, SQLite, sync, 1,024 runs of ``bench/fleet_graph.py``: one worker at
concurrency 8 ran 4,513 steps/s on both cores and 5,829 pinned to one; two worker
processes at concurrency 4 ran 4,580 unpinned and 7,083 each pinned to its own core. So
``wayline worker --processes N`` gives each process a core of its own by default, and a
single one places itself on one (``wayline.worker.placement``); ``WorkerConfig.cpus``
(``--cpus``) names CPUs instead. Pinning is per thread: a worker embedded in an
application pins only its own threads.

Linux only (``os.sched_setaffinity``); elsewhere asking for CPUs is a ``ConfigError``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from wayline.errors import ConfigError

__all__ = ["allowed_cpus", "check_cpus", "parse_cpus", "pin_this_thread"]


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on, in order (empty where the OS cannot say)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    return sorted(getaffinity(0)) if getaffinity is not None else []


def check_cpus(cpus: Iterable[int]) -> frozenset[int]:
    """``cpus`` if this process may be pinned to them, else a ``ConfigError`` saying why."""
    if isinstance(cpus, str):  # iterated, "all" would name CPUs "a" and "l"
        raise ConfigError(
            f'cpus={cpus!r} is text: give CPU numbers as a set ({{0}} or {{0, 1}}), "auto" '
            "to let the worker place itself, or None to leave its threads to the OS (what "
            "--cpus all means on the command line)"
        )
    chosen = frozenset(cpus)
    strays = sorted(repr(c) for c in chosen if not isinstance(c, int) or isinstance(c, bool))
    if strays:
        raise ConfigError(f"cpus names {', '.join(strays)}: CPUs are numbers, as in {{0, 1}}")
    if not hasattr(os, "sched_setaffinity"):
        raise ConfigError(
            "pinning a worker to CPUs needs os.sched_setaffinity (Linux); leave cpus unset"
        )
    if not chosen:
        raise ConfigError("cpus is empty: name at least one CPU, or leave it unset")
    allowed = allowed_cpus()
    if not chosen <= set(allowed):
        raise ConfigError(
            f"CPU(s) {sorted(chosen - set(allowed))} are not available to this process "
            f"(it may run on {allowed}); name CPUs from that list"
        )
    return chosen


def parse_cpus(text: str) -> frozenset[int]:
    """``"0"``, ``"0,2"`` or ``"0-3"``: the CPUs named, checked against what is allowed."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    except ValueError:
        raise ConfigError(
            f"--cpus {text!r} is not a CPU list: write it as 0, 0,2 or 0-3 (or auto, or all)"
        ) from None
    return check_cpus(cpus)


def pin_this_thread(cpus: Iterable[int]) -> None:
    """Run the calling thread (and threads it starts later) on ``cpus`` only."""
    os.sched_setaffinity(0, cpus)  # 0: the calling thread, on Linux
