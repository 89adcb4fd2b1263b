"""Probes: an off-by-default hook on task starts and finishes and on effect dispatches.

A harness that must count what really ran (``wayline killtest`` compares the node
executions a process performed with the history its store committed) installs one probe;
with none installed each hook point costs one global read. The probe is called in the
thread running the task, before the event's consequences (a task start before the node
body, a finish before its writes are committed), so a probe that kills the process there
stops it exactly at that boundary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["ProbeEvent", "emit", "install", "installed", "wrap_effect"]

ProbeKind = Literal["task_start", "task_finish", "effect_done"]


@dataclasses.dataclass(frozen=True, slots=True)
class ProbeEvent:
    """One observed event. ``key`` is the idempotency key of an effect event."""

    kind: ProbeKind
    tenant: str
    run_id: str
    step: int
    node: str
    task_id: str
    key: str | None = None
    idempotent: bool = False


Probe = Callable[[ProbeEvent], None]

_probe: Probe | None = None


def install(probe: Probe | None) -> None:
    """Install ``probe`` for this process (None removes it)."""
    global _probe
    _probe = probe


def installed() -> bool:
    return _probe is not None


def emit(kind: ProbeKind, tenant: str, run_id: str, step: int, node: str, task_id: str) -> None:
    probe = _probe
    if probe is not None:
        probe(ProbeEvent(kind, tenant, run_id, step, node, task_id))


def wrap_effect(
    fn: Callable[[str], Any],
    *,
    tenant: str,
    run_id: str,
    step: int,
    node: str,
    task_id: str,
    idempotent: bool,
) -> Callable[[str], Any]:
    """``fn`` reporting each completed dispatch (the provider answered) with its key."""
    probe = _probe
    if probe is None:
        return fn

    def dispatch(key: str) -> Any:
        result = fn(key)
        probe(ProbeEvent("effect_done", tenant, run_id, step, node, task_id, key, idempotent))
        return result

    return dispatch
