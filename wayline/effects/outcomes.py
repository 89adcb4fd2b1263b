"""What an exception raised by an effect's function says about the outcome.

An exception from the provider call does not say whether the provider acted: a read timeout
after the request was sent may have charged the card. So a raised exception is an UNKNOWN
outcome, and nothing resends it automatically, unless something makes a resend safe. The
table below is the whole rule; ``wayline effects list`` prints it and docs/operations.md
explains it.
"""

from __future__ import annotations

from typing import Literal

from wayline.effects.retry import RetryPolicy
from wayline.errors import EffectDeclined

__all__ = ["DECISION_TABLE", "PROGRAMMING_ERRORS", "Verdict", "judge"]

Verdict = Literal["code", "definite", "safe_resend", "reconcile", "unknown"]

PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    NameError,
    TypeError,
    AttributeError,
    SyntaxError,
    ImportError,
)
"""Errors of the calling code, not the provider: the node fails as a code error with its
traceback (the intent stays PENDING, so the fixed code sends it under the same key)."""

DECISION_TABLE: tuple[tuple[str, str], ...] = (
    (
        "NameError, TypeError, AttributeError, SyntaxError, ImportError",
        "a code error: the node fails with the traceback; the intent stays PENDING",
    ),
    (
        "EffectDeclined, or a class in the policy's definite_on",
        "definite: retried as the effect's policy allows, then FAILED",
    ),
    ("any exception, idempotent=True", "resent under the same key as the policy allows"),
    (
        "any exception, reconcile= given",
        "reconcile(key): a record is the result; NOT_FOUND makes it definite",
    ),
    ("any other exception", "UNKNOWN: the run parks for `wayline effects resolve`"),
    (
        "worker died mid-call (EXECUTING)",
        "reconcile, or resend if idempotent, else UNKNOWN and parked",
    ),
)
"""(what happened, what wayline does): never a resend after an ambiguous result by default."""


def judge(
    exc: BaseException, policy: RetryPolicy, *, idempotent: bool, reconciles: bool
) -> Verdict:
    """Sort an exception raised by an effect's function into the table's rows."""
    if isinstance(exc, PROGRAMMING_ERRORS):
        return "code"
    if isinstance(exc, (EffectDeclined, *policy.definite_on)):
        return "definite"
    if idempotent:
        return "safe_resend"
    return "reconcile" if reconciles else "unknown"
