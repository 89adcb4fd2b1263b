"""What names a fork: its origin record and its incarnation's mark. A leaf of the base
(it imports only the store's records), so the effect ledger's replay of a fork
(``wayline.effects.replay``) and the graph's time travel (``wayline.graph.travel``) share
these names without the base importing the graph."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal, get_args

from wayline.store.records import AuditRecord, RunRecord

__all__ = [
    "EFFECT_MODES",
    "FORK_ACTION",
    "FORK_INCARNATION",
    "EffectsMode",
    "ForkOrigin",
    "is_fork",
]

EffectsMode = Literal["original", "sandbox", "live"]
EFFECT_MODES: tuple[str, ...] = get_args(EffectsMode)
FORK_ACTION = "fork"
"""The audit action of a fork's origin record."""


@dataclasses.dataclass(frozen=True, slots=True)
class ForkOrigin:
    """Where a fork came from and how it treats effects; kept in its audit log."""

    run_id: str
    """The run it was forked from."""
    step: int
    """The last step it shares with that run."""
    effects: EffectsMode
    effects_of: str
    """The run whose recorded effects ``original`` and ``sandbox`` look up: the origin, or
    for a fork of a non-live fork, that fork's own ``effects_of``."""
    key_suffix: str = ""
    """Appended to business keys: a live fork's own (``~<fork id>``), inherited by forks of it."""
    incarnation: str = ""
    """The incarnation of ``effects_of``, part of the keys its tasks derived."""

    def to_audit(self, tenant_id: str, run_id: str, actor: str) -> AuditRecord:
        detail = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return AuditRecord(tenant_id, run_id, actor, FORK_ACTION, self.effects, None, detail)

    @classmethod
    def from_audit(cls, entry: AuditRecord) -> ForkOrigin:
        return cls(**json.loads(entry.detail or "{}"))

    def describe(self) -> str:
        return f"run {self.run_id} at step {self.step} (effects={self.effects})"


FORK_INCARNATION = "fork-"
"""A fork's incarnation starts with this, so starting an ordinary run needs no look at its
audit log to learn it is not a fork (``is_fork``)."""


def is_fork(run: RunRecord) -> bool:
    return run.incarnation.startswith(FORK_INCARNATION)
