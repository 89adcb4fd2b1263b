"""``wayline.server.http.call``: a blocking store call on a thread of the server's pool, in
the caller's context; a cancelled caller unwinds only once the call has returned."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from wayline.server.http import call

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_call_runs_on_another_thread_in_the_callers_context() -> None:
    async def scenario() -> tuple[str, bool]:
        WHO.set("alice")
        return await call(lambda: (WHO.get(), threading.current_thread() is not main))

    main = threading.current_thread()
    assert asyncio.run(scenario()) == ("alice", True)


def test_a_calls_error_is_raised_to_the_caller() -> None:
    def boom() -> None:
        raise ValueError("the store said no")

    with pytest.raises(ValueError, match="the store said no"):
        asyncio.run(call(boom))


def test_a_cancelled_caller_unwinds_after_its_call_returned() -> None:
    entered, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def slow() -> None:
        entered.set()
        release.wait(30)
        finished.append("call")

    async def scenario() -> None:
        task = asyncio.create_task(call(slow))
        assert await asyncio.to_thread(entered.wait, 30)
        task.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the caller, which keeps waiting
        assert not task.done()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        finished.append("caller")

    asyncio.run(scenario())
    assert finished == ["call", "caller"]


def test_a_forked_child_calls_on_threads_of_its_own() -> None:
    """The parent's pool has threads; the child's copy of it has none, so it starts anew
    (without the reset a call in the child waited forever)."""
    import os

    assert asyncio.run(call(lambda: 1)) == 1
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if a call returns in time
        code = 1
        try:
            code = 0 if asyncio.run(asyncio.wait_for(call(lambda: 2), 10)) == 2 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
