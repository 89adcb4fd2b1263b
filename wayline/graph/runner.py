"""Running one task: its attempts under the node's retry policy, then its error handler,
on a thread (``run_task``) or as a coroutine (``arun_task``). What an attempt's output or
failure means is the loop's to say (``tasks.TaskSteps``); a node's ``TimeoutPolicy`` bounds
each coroutine attempt (``timeouts``)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from wayline.errors import EffectOutcomeUnknown, GraphInterrupt, NodeCancelledError, ParentCommand
from wayline.graph.context import reset_scope, set_scope
from wayline.graph.subgraph import from_child
from wayline.graph.tasks import NodeFailedEarlier, TaskOutcome
from wayline.graph.timeouts import timed

if TYPE_CHECKING:
    from wayline.graph.loop import RunLoop
    from wayline.graph.tasks import ExecTask

__all__ = ["arun_task", "run_task"]


_CAUGHT = (GraphInterrupt, EffectOutcomeUnknown, ParentCommand, Exception)
"""What an attempt's loop catches; other signals (a lost lease, a cancellation) leave it."""


def _succeeded(loop: RunLoop, task: ExecTask, key: Any, output: Any) -> TaskOutcome:
    """A node's output as its outcome, cached under ``key`` when its node caches."""
    done = loop.outcome(task, output)
    loop.to_cache(task, key, output)
    _finished(loop, task.spec.name)
    return done


def _finished(loop: RunLoop, node: str) -> None:
    """Tell the invocation's ``node_finished`` callback, if any, that ``node`` finished."""
    if loop.invocation.node_finished is not None:
        loop.invocation.node_finished(node)


def _failed(
    loop: RunLoop, task: ExecTask, exc: BaseException, attempt: int
) -> TaskOutcome | float | None:
    """What an attempt that raised comes to, the same for sync and async nodes: an outcome
    now (an interrupt, an unknown effect outcome, a subgraph's ``Command.PARENT``), the
    delay before the next attempt, or None: failed for good (the error handler decides)."""
    if isinstance(exc, GraphInterrupt | EffectOutcomeUnknown):
        return loop.failed(task, exc)
    if isinstance(exc, ParentCommand):
        return loop.outcome(task, from_child(exc))
    return loop.retry_delay(task, exc, attempt)  # type: ignore[arg-type]


def run_task(loop: RunLoop, task: ExecTask) -> TaskOutcome:
    if (earlier := loop.failed_before(task)) is not None:  # its handler goes on
        return _handled(loop, task, earlier)
    attempt = 0
    while True:
        attempt += 1
        token = set_scope(task.scope)
        try:
            fn, args = loop.node_call(task)
            key = loop.cache_key(task, args[0])
            if (hit := loop.from_cache(task, key)) is not None:
                return hit
            output = fn(*args)
            if type(output) is not dict and inspect.isawaitable(output):  # an ABC check
                output = asyncio.run(_await(_own(task, _bounded(loop, task, output))))
            return _succeeded(loop, task, key, output)
        except _CAUGHT as exc:
            judged = _failed(loop, task, exc, attempt)
            if judged is None:
                return _handled(loop, task, exc)  # type: ignore[arg-type]
            if isinstance(judged, TaskOutcome):
                return judged
            delay = judged
        finally:
            reset_scope(token)
        time.sleep(delay)


def _handled(loop: RunLoop, task: ExecTask, exc: Exception) -> TaskOutcome:
    """A node that failed for good: its error handler's output, or the failure."""
    call = loop.handler_call(task, exc)
    if call is None:
        return loop.failed(task, exc)
    loop.record_failure(task, exc)
    if not isinstance(exc, NodeFailedEarlier) and (held := loop.held_before_handler(task)):
        return held
    fn, args, is_async = call
    try:
        output = fn(*args)
        if is_async or (type(output) is not dict and inspect.isawaitable(output)):
            output = asyncio.run(_await(output))
        return _by_handler(loop, task, output)
    except (GraphInterrupt, EffectOutcomeUnknown, Exception) as again:
        return loop.failed(task, again)


def _by_handler(loop: RunLoop, task: ExecTask, output: Any) -> TaskOutcome:
    """The error handler's output as the task's outcome, named for the handler's node."""
    done = loop.outcome(task, output)
    handler = loop.graph.nodes[task.spec.name].error_handler
    done.handler = None if handler is None else handler.name
    _finished(loop, done.handler or task.spec.name)
    return done


async def _ahandled(loop: RunLoop, task: ExecTask, exc: Exception) -> TaskOutcome:
    call = loop.handler_call(task, exc)
    if call is None:
        return loop.failed(task, exc)
    await asyncio.to_thread(loop.record_failure, task, exc)
    if not isinstance(exc, NodeFailedEarlier) and (held := loop.held_before_handler(task)):
        return held
    fn, args, is_async = call
    try:
        output = await fn(*args) if is_async else await asyncio.to_thread(fn, *args)
        return _by_handler(loop, task, output)
    except (GraphInterrupt, EffectOutcomeUnknown, Exception) as again:
        return loop.failed(task, again)


async def arun_task(loop: RunLoop, task: ExecTask) -> TaskOutcome:
    has_handler = loop.graph.nodes[task.spec.name].error_handler is not None  # a read:
    earlier = await asyncio.to_thread(loop.failed_before, task) if has_handler else None
    if earlier is not None:  # only then, off the event loop
        return await _ahandled(loop, task, earlier)
    attempt = 0
    while True:
        attempt += 1
        token = set_scope(task.scope)
        try:
            fn, args = loop.node_call(task)
            key = loop.cache_key(task, args[0])
            if (hit := loop.from_cache(task, key)) is not None:
                return hit
            if loop.graph.nodes[task.spec.name].is_async:
                output = await _own(task, _bounded(loop, task, fn(*args)))
            else:
                output = await asyncio.to_thread(fn, *args)
            return _succeeded(loop, task, key, output)
        except _CAUGHT as exc:
            judged = _failed(loop, task, exc, attempt)
            if judged is None:
                return await _ahandled(loop, task, exc)  # type: ignore[arg-type]
            if isinstance(judged, TaskOutcome):
                return judged
            delay = judged
        finally:
            reset_scope(token)
        await asyncio.sleep(delay)


def _bounded(loop: RunLoop, task: ExecTask, attempt: Awaitable[Any]) -> Awaitable[Any]:
    """The attempt under its node's ``TimeoutPolicy`` (a timeout raises ``NodeTimeoutError``
    into the retry loop above, as any failure of the node would)."""
    policy = task.spec.timeout or loop.graph.nodes[task.spec.name].timeout
    if policy is None or task.scope.pulse is None:
        return attempt
    return timed(attempt, policy, task.spec.name, task.scope.pulse)


async def _own(task: ExecTask, attempt: Awaitable[Any]) -> Any:
    """The attempt's result; a ``CancelledError`` the node raised itself (its task is not
    being cancelled) is ``NodeCancelledError``, a failure of the node like any other."""
    try:
        return await attempt
    except asyncio.CancelledError as exc:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the caller cancels the run: let it
        raise NodeCancelledError(task.spec.name) from exc


async def _await(awaitable: Any) -> Any:
    return await awaitable
