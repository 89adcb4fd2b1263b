"""Identities: a run's (``RunRef``) and the deterministic ones derived from it (task ids,
effect keys, segment ids). A leaf module (it imports nothing of wayline), so every plane
names runs and derives ids the same way without importing another."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

__all__ = ["RunRef", "derive_id"]


def derive_id(*parts: Any) -> str:
    """A deterministic id: a replay or another process computes the same one."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


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
