"""Deterministic identities: task ids, effect keys, segment ids. A leaf module (it imports
nothing of wayline), so every plane derives ids the same way without importing another."""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["derive_id"]


def derive_id(*parts: Any) -> str:
    """A deterministic id: a replay or another process computes the same one."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]
