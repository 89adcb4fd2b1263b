"""Identities: a run's (``RunRef``) and the deterministic ones derived from it (task ids,
effect keys, segment ids). A leaf module (it imports nothing of wayline), so every plane
names runs and derives ids the same way without importing another."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
from typing import Any

__all__ = ["RunRef", "derive_id", "incarnation_at", "rolled_back", "unique_hex"]

_UNIQUE = random.Random(os.urandom(16))
if hasattr(os, "register_at_fork"):  # a forked child must not repeat its parent's digits
    os.register_at_fork(after_in_child=lambda: _UNIQUE.seed(os.urandom(16)))


def unique_hex(digits: int) -> str:
    """Random hex digits that tell apart what must not collide (a fork's channel versions,
    a run row's incarnation); unique, not secret. From a generator seeded once from the OS
    (again in a forked child) rather than a system call each: ``uuid4`` and ``secrets``
    cost a ``getrandom`` call per LangGraph channel version and checkpoint."""
    return f"{_UNIQUE.getrandbits(4 * digits):0{digits}x}"


def derive_id(*parts: Any) -> str:
    """A deterministic id: a replay or another process computes the same one."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


_ROLLBACK = "@rb"


def rolled_back(incarnation: str, after_step: int, nonce: str) -> str:
    """A run's incarnation after a rollback to ``after_step``: the steps after it run again
    under keys of their own (``incarnation_at``), the steps up to it keep theirs."""
    return f"{incarnation}{_ROLLBACK}{after_step}.{nonce}"


def incarnation_at(incarnation: str, step: int) -> str:
    """The incarnation a step's effect keys derive from: the run's up to its last rollback
    to before ``step`` (the last one that removed the step, so the step ran again after
    it; a run never rolled back: its incarnation as it is). A step that ran again derives
    keys its removed run never had, so a provider deduplicating by key charges it anew and
    the ledger keeps both records; a step no later rollback removed keeps its keys."""
    head, *backs = incarnation.split(_ROLLBACK)
    upto = 0
    for i, back in enumerate(backs, 1):
        if int(back.partition(".")[0]) < step:
            upto = i
    return _ROLLBACK.join([head, *backs[:upto]])


@dataclasses.dataclass(frozen=True, slots=True)
class RunRef:
    """A run's identity: its tenant and its id (LangGraph's thread id). One small value
    that crosses layers, instead of a config dict built only to be parsed back."""

    tenant_id: str
    run_id: str

    def config(self, **configurable: Any) -> dict[str, Any]:
        """The LangGraph-style config that names this run (for the public graph API)."""
        return {
            "configurable": {"thread_id": self.run_id, "tenant": self.tenant_id, **configurable}
        }
