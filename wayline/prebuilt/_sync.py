"""Run a coroutine to its end from synchronous code: a wayline node is either sync or
async for the whole graph, and a sync prebuilt node may still meet an async-only tool,
prompt or model callable."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


async def _wait(awaitable: Awaitable[T]) -> T:
    return await awaitable


def run_sync(awaitable: Awaitable[T]) -> T:
    """``awaitable``'s result; in this thread when no event loop runs here, else in a
    thread of its own (with this context: the node's scope, so ``interrupt()`` works)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_wait(awaitable))
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, _wait(awaitable))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="wayline-run-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
