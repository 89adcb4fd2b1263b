"""Retry policy for effects: exponential backoff with full jitter, and a budget."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

__all__ = ["RetryPolicy"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently an effect is re-attempted before it fails for good.

    Every attempt uses the same idempotency key. ``retry_on`` decides which exceptions are
    worth another attempt (default: any ``Exception``).
    """

    max_attempts: int = 3
    initial_delay: float = 0.5
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: bool = True
    retry_on: Callable[[BaseException], bool] = lambda exc: True

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        if not self.jitter:
            return cap
        return (rng or random).uniform(0, cap)  # "full jitter": spreads a thundering herd

    def should_retry(self, attempt: int, exc: BaseException) -> bool:
        return attempt < self.max_attempts and self.retry_on(exc)
