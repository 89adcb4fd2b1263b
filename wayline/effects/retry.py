"""Retry policy for nodes and effects: exponential backoff with full jitter, and a budget.

The argument names are LangGraph's (``initial_interval``, ``backoff_factor``,
``max_interval``, ``max_attempts``, ``jitter``, ``retry_on``), and so is a node's default
``retry_on``: a programming error (``ValueError``, ``TypeError``, ``KeyError``...) fails at
once, because running the same code on the same input again gives the same error; network
failures and 5xx responses are retried. For an effect a policy applies only where a resend
is safe (``wayline.effects.outcomes``), and there its default is "retry any exception".
wayline's earlier names (``initial_delay``,
``max_delay``, ``multiplier``) are accepted too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["RetryPolicy", "default_retry_on", "retry_any"]

_PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    SyntaxError,
    RuntimeError,
    ReferenceError,
    StopIteration,
    StopAsyncIteration,
    OSError,
)


def default_retry_on(exc: BaseException) -> bool:
    """LangGraph's default: retry connection errors and 5xx HTTP responses, never a
    programming error; anything else is retried."""
    if isinstance(exc, ConnectionError):
        return True
    status = _http_status(exc)
    if status is not None:
        return 500 <= status < 600
    return not isinstance(exc, _PROGRAMMING_ERRORS)


def retry_any(exc: BaseException) -> bool:
    """Retry every exception (what effects do by default: the provider decides)."""
    return True


def _http_status(exc: BaseException) -> int | None:
    """The status of an ``httpx.HTTPStatusError`` / ``requests.HTTPError``, by duck typing
    so that neither library is imported."""
    if type(exc).__name__ not in ("HTTPStatusError", "HTTPError"):
        return None
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


RetryOn = type[BaseException] | Sequence[type[BaseException]] | Callable[[BaseException], bool]


class RetryPolicy:
    """How often and how patiently a failed node or effect is attempted again.

    Every attempt of an effect uses the same idempotency key; a retried node runs again
    in place with the same effect keys. ``retry_on`` is an exception class, a sequence of
    them, or a predicate; left unset it is ``default_retry_on`` for a node (LangGraph's)
    and ``retry_any`` for an effect.

    For an effect, a policy applies only when a resend is safe (``wayline.effects.outcomes``):
    the effect is ``idempotent``, its ``reconcile`` found no record, or the failure is
    definite: an ``EffectDeclined`` or one of the ``definite_on`` classes (say, your HTTP
    client's 4xx error). Any other exception leaves the outcome unknown and parks the run.
    """

    __slots__ = (
        "backoff_factor",
        "definite_on",
        "initial_interval",
        "jitter",
        "max_attempts",
        "max_interval",
        "retry_on",
    )

    initial_interval: float
    backoff_factor: float
    max_interval: float
    max_attempts: int
    jitter: bool
    retry_on: RetryOn | None
    definite_on: tuple[type[BaseException], ...]

    def __init__(
        self,
        initial_interval: float | None = None,
        backoff_factor: float | None = None,
        max_interval: float | None = None,
        max_attempts: int = 3,
        jitter: bool = True,
        retry_on: RetryOn | None = None,
        *,
        definite_on: type[BaseException] | Sequence[type[BaseException]] = (),
        initial_delay: float | None = None,
        max_delay: float | None = None,
        multiplier: float | None = None,
    ) -> None:
        values: dict[str, Any] = {
            "initial_interval": _pick(initial_interval, initial_delay, 0.5),
            "backoff_factor": _pick(backoff_factor, multiplier, 2.0),
            "max_interval": _pick(max_interval, max_delay, 128.0),
            "max_attempts": max_attempts,
            "jitter": jitter,
            "retry_on": retry_on,
            "definite_on": (definite_on,) if isinstance(definite_on, type) else tuple(definite_on),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"RetryPolicy is frozen; build a new one instead of setting {key}")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in sorted(self.__slots__))
        return f"RetryPolicy({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetryPolicy):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__ if k != "retry_on"))

    # wayline's earlier names, read back
    @property
    def initial_delay(self) -> float:
        return self.initial_interval

    @property
    def max_delay(self) -> float:
        return self.max_interval

    @property
    def multiplier(self) -> float:
        return self.backoff_factor

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        cap = min(self.max_interval, self.initial_interval * self.backoff_factor ** (attempt - 1))
        if not self.jitter:
            return cap
        return (rng or random).uniform(0, cap)  # "full jitter": spreads a thundering herd

    def should_retry(
        self,
        attempt: int,
        exc: BaseException,
        default: Callable[[BaseException], bool] = default_retry_on,
    ) -> bool:
        return attempt < self.max_attempts and self.matches(exc, default)

    def matches(
        self, exc: BaseException, default: Callable[[BaseException], bool] = default_retry_on
    ) -> bool:
        """Whether ``exc`` is worth another attempt under ``retry_on`` (or ``default``)."""
        rule = self.retry_on if self.retry_on is not None else default
        if isinstance(rule, type):
            return isinstance(exc, rule)
        if isinstance(rule, Sequence):
            return isinstance(exc, tuple(rule))
        return bool(rule(exc))


def _pick(langgraph_name: float | None, wayline_name: float | None, default: float) -> float:
    if langgraph_name is not None:
        return langgraph_name
    return wayline_name if wayline_name is not None else default
