"""Running one step's tasks: on a thread pool (sync) or as asyncio tasks (async), each
outcome handed to the loop as it finishes; a task that fails for good, a cancelled caller
or ``step_timeout`` cancels the async peers still running, as LangGraph does."""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING

from wayline.graph.runner import arun_task, run_task
from wayline.graph.streaming import EventBus, task_result

if TYPE_CHECKING:
    from wayline.graph.loop import ExecTask, RunLoop, TaskOutcome

__all__ = ["aexecute", "execute", "thread_pool"]


def execute(
    loop: RunLoop, tasks: list[ExecTask], pool: ThreadPoolExecutor | None
) -> list[TaskOutcome]:
    """A sync step's tasks: inline when one (or no pool), else on ``pool``."""
    chat = loop.invocation.chat_callbacks  # a worker recording ``messages``
    if len(tasks) <= 1 or pool is None:
        outcomes = [run_task(loop, t) for t in tasks]
        for o in outcomes:
            loop.task_done(o)
            if chat is not None:
                chat.node_output(o)
        return outcomes
    futures = [pool.submit(contextvars.copy_context().run, run_task, loop, t) for t in tasks]
    outcomes = []
    for future in as_completed(futures):
        outcome = future.result()
        loop.task_done(outcome)
        if chat is not None:
            chat.node_output(outcome)
        outcomes.append(outcome)
    return outcomes


async def aexecute(
    loop: RunLoop, tasks: list[ExecTask], step_timeout: float | None
) -> list[TaskOutcome]:
    """An async step's tasks, at most ``config["max_concurrency"]`` at a time."""
    limit = _max_concurrency(loop)
    if limit is None:
        futures = [asyncio.ensure_future(arun_task(loop, t)) for t in tasks]
    else:  # config["max_concurrency"]: at most that many tasks at a time
        gate = asyncio.Semaphore(limit)

        async def gated(task: ExecTask) -> TaskOutcome:
            async with gate:
                return await arun_task(loop, task)

        futures = [asyncio.ensure_future(gated(t)) for t in tasks]
    outcomes = []
    try:
        for next_done in asyncio.as_completed(futures, timeout=step_timeout):
            outcome = await next_done
            loop.task_done(outcome)
            if loop.invocation.chat_callbacks is not None:  # messages the node returned
                loop.invocation.chat_callbacks.node_output(outcome)
            bus = loop.invocation.emit
            if isinstance(bus, EventBus):
                if event := loop.stream_finished(outcome):
                    bus.put_own(event)
                if bus.wants_tasks:  # its result after its update, before a slower peer's
                    bus.put_own(("tasks", task_result(outcome)))
            outcomes.append(outcome)
            if outcome.error is not None:  # failed for good: as LangGraph, the peers
                break  # still running are cancelled (they run again on resume)
    except BaseException:  # the caller cancelled (or a task failed hard): as LangGraph,
        running = [f for f in futures if not f.done()]  # the step's nodes still running
        for future in running:  # get CancelledError at their await, and are waited for,
            future.cancel()  # so none goes on after the call has returned
        await asyncio.gather(*running, return_exceptions=True)
        raise
    if running := [f for f in futures if not f.done()]:  # a peer failed
        for future in running:
            future.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    return outcomes


def _max_concurrency(loop: RunLoop) -> int | None:
    """LangGraph's ``config["max_concurrency"]``: how many of a step's tasks run at once."""
    limit = loop.config.get("max_concurrency")
    return None if limit is None else max(1, int(limit))


def thread_pool(loop: RunLoop) -> ThreadPoolExecutor:
    """The threads a sync run's parallel tasks run on (8, or ``max_concurrency``)."""
    return ThreadPoolExecutor(_max_concurrency(loop) or 8, thread_name_prefix="wayline-node")
