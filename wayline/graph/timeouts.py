"""Node timeouts (LangGraph's ``TimeoutPolicy``): a hard cap on one attempt's wall-clock
time (``run_timeout``) and a cap on time without progress (``idle_timeout``), refreshed by
``runtime.heartbeat()`` and, under ``refresh_on="auto"``, by what the node streams.

A timeout is an error of the attempt, like any exception the node raises: the node's retry
policy sees it, then its error handler, so a timed-out run resumes like any failed one. The
attempt is cancelled and its output never read; what it did durably (an effect's intent or
outcome) stays in the ledger, so a retry under the same keys reuses or reconciles it.
Timeouts need cancellation, which only coroutines have: a sync node with a timeout is
refused when the graph compiles.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, Literal

from wayline.errors import NodeTimeoutError

__all__ = ["Pulse", "TimeoutPolicy", "check_async", "timed"]


def _seconds(value: float | timedelta | None, field: str) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise ValueError(f"{field} must be greater than 0, got {value!r}")
    return seconds


@dataclasses.dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """How long one attempt of a node may take (seconds or a ``timedelta``)."""

    run_timeout: float | timedelta | None = None
    """Hard wall-clock cap on one attempt; never refreshed."""
    idle_timeout: float | timedelta | None = None
    """Longest time an attempt may go without progress."""
    refresh_on: Literal["auto", "heartbeat"] = "auto"
    """What refreshes ``idle_timeout``: ``"auto"`` (stream writes and heartbeats) or only
    ``runtime.heartbeat()``."""

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """A policy with positive float fields (a bare number or timedelta is a run
        timeout); None when nothing is capped. Raises ``ValueError`` on a bad value."""
        if value is None:
            return None
        if not isinstance(value, TimeoutPolicy):
            value = cls(run_timeout=value)
        elif _normal(value):
            return value
        if value.refresh_on not in ("auto", "heartbeat"):
            raise ValueError("refresh_on must be 'auto' or 'heartbeat'")
        run = _seconds(value.run_timeout, "run_timeout")
        idle = _seconds(value.idle_timeout, "idle_timeout")
        if run is None and idle is None:
            return None
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=value.refresh_on)


def _normal(p: TimeoutPolicy) -> bool:
    def ok(v: Any) -> bool:
        return v is None or (type(v) is float and v > 0)

    return (
        p.refresh_on in ("auto", "heartbeat")
        and ok(p.run_timeout)
        and ok(p.idle_timeout)
        and (p.run_timeout is not None or p.idle_timeout is not None)
    )


def check_async(node: str, policy: TimeoutPolicy | None, is_async: bool) -> None:
    """Refuse a timeout on a node that cannot be cancelled (as LangGraph does)."""
    if policy is not None and not is_async:
        raise ValueError(
            f"node {node!r} has a timeout, but timeouts are only supported for async nodes "
            "(a thread cannot be cancelled): make it `async def`, or drop the timeout"
        )


class Pulse:
    """The progress clock of one attempt: heartbeats always refresh it; stream writes do
    under ``refresh_on="auto"``."""

    __slots__ = ("auto", "last")

    def __init__(self, policy: TimeoutPolicy) -> None:
        self.auto = policy.refresh_on == "auto"
        self.last = time.monotonic()

    def beat(self) -> None:
        self.last = time.monotonic()

    def progress(self) -> None:
        if self.auto:
            self.last = time.monotonic()


async def timed(awaitable: Awaitable[Any], policy: TimeoutPolicy, node: str, pulse: Pulse) -> Any:
    """Await ``awaitable`` under ``policy``: its result, or ``NodeTimeoutError`` once a cap
    passes (the attempt is cancelled; what it returns or writes after that is dropped)."""
    run = _float(policy.run_timeout)
    idle = _float(policy.idle_timeout)
    start = time.monotonic()
    attempt = asyncio.ensure_future(awaitable)
    try:
        while True:
            now = time.monotonic()
            limits = []
            if run is not None:
                limits.append((start + run, "run"))
            if idle is not None:
                limits.append((pulse.last + idle, "idle"))
            at, kind = min(limits)
            if at <= now:
                attempt.cancel()
                attempt.add_done_callback(_retrieve)  # a swallowed cancel's result is dropped
                raise NodeTimeoutError(
                    node, now - start, kind=kind, idle_timeout=idle, run_timeout=run
                )
            done, _ = await asyncio.wait({attempt}, timeout=at - now)
            if done:
                return attempt.result()
    except BaseException:
        if not attempt.done():
            attempt.cancel()
            attempt.add_done_callback(_retrieve)
        raise


def _float(value: float | timedelta | None) -> float | None:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def _retrieve(fut: asyncio.Future[Any]) -> None:
    with contextlib.suppress(BaseException):
        fut.exception()
