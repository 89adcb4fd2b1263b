"""Driving a run's loop to its end, step by step, sync (``run_loop``: ``invoke``,
``stream``, workers) or async (``_adrive``); mixed into ``CompiledGraph``. The two differ
only in how a step's tasks run; breakpoints, cached events and task events are the same."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wayline.graph.driving import (
    aexecute_live,
    execute_live,
    stops_after,
    stops_before,
    task_input,
)
from wayline.graph.executing import aexecute, execute, thread_pool
from wayline.graph.loop import RunLoop
from wayline.graph.mixin import as_graph
from wayline.graph.runner import run_task
from wayline.graph.streaming import PAUSED, RESUMED, EventBus, task_result, task_start
from wayline.graph.types import Command

__all__ = ["LoopDrivers"]


class LoopDrivers:
    """Mixed into ``CompiledGraph``."""

    def run_loop(
        self,
        loop: RunLoop,
        input: Any,
        *,
        breakpoints: tuple[frozenset[str], frozenset[str]] | None = None,
    ) -> Iterator[tuple[str, Any]]:
        """Drive ``loop`` to its end, yielding (stream mode, chunk); workers call this."""
        error: BaseException | None = None
        pool: ThreadPoolExecutor | None = None
        graph = as_graph(self)
        before, after = breakpoints or (
            frozenset(graph.interrupt_before),
            frozenset(graph.interrupt_after),
        )
        resuming = True  # no new input (a worker's queued input counts as input)
        loop.breaks_before = before
        bus = (
            loop.invocation.emit
            if isinstance(loop.invocation.emit, EventBus) and not loop.invocation.namespace
            else None
        )
        try:
            for event in loop.begin(input):
                resuming = resuming and event[0] != "values"
                yield event
            if resuming and loop.step >= 0:
                yield (RESUMED, loop.values())
            while (tasks := loop.next_step()) is not None:
                if stops_before(loop, tasks, before, resuming or isinstance(input, Command)):
                    loop.pause()
                    yield PAUSED
                    break
                yield from loop.cached_events()
                if isinstance(loop.invocation.emit, EventBus) and loop.invocation.emit.wants_tasks:
                    for t in tasks:
                        yield ("tasks", task_start(t, task_input(loop, t), loop.graph.barriers))
                if bus is not None:  # streams each task's result as it finishes
                    pool = pool or thread_pool(loop)
                    outcomes = yield from execute_live(loop, tasks, pool, bus, run_task)
                else:
                    if len(tasks) > 1 and pool is None:
                        pool = thread_pool(loop)
                    outcomes = execute(loop, tasks, pool)
                    emit = loop.invocation.emit
                    if isinstance(emit, EventBus) and emit.wants_tasks:
                        for o in outcomes:
                            yield ("tasks", task_result(o))
                yield from loop.after_step(outcomes)
                if stops_after(loop, outcomes, after):
                    loop.pause()
                    yield PAUSED
                    break
            loop.close(None)
            graph._sample_verify(loop)
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
            loop.close(error)

    async def _adrive(
        self,
        loop: RunLoop,
        input: Any,
        breakpoints: tuple[frozenset[str], frozenset[str]] | None = None,
    ) -> AsyncGenerator[tuple[str, Any], None]:
        graph = as_graph(self)
        error: BaseException | None = None
        before, after = breakpoints or (frozenset(), frozenset())
        resuming, loop.breaks_before = True, before
        bus = loop.invocation.emit if isinstance(loop.invocation.emit, EventBus) else None
        loop.as_finished = True
        try:
            for event in loop.begin(input):
                resuming = resuming and event[0] != "values"
                yield event
            if resuming and loop.step >= 0:
                yield (RESUMED, loop.values())
            while (tasks := loop.next_step()) is not None:
                if stops_before(loop, tasks, before, resuming or isinstance(input, Command)):
                    loop.pause()
                    yield PAUSED
                    break
                for event in loop.cached_events():
                    yield event
                if bus is not None and bus.wants_tasks:
                    for t in tasks:
                        yield ("tasks", task_start(t, task_input(loop, t), loop.graph.barriers))
                if bus is None:
                    outcomes = await aexecute(loop, tasks, graph.step_timeout)
                else:
                    running = asyncio.ensure_future(aexecute(loop, tasks, graph.step_timeout))
                    async with contextlib.aclosing(aexecute_live(bus, running)) as live:
                        async for event in live:
                            yield event
                    outcomes = running.result()  # each task's result streamed as it finished
                for event in loop.after_step(outcomes):
                    yield event
                if stops_after(loop, outcomes, after):
                    loop.pause()
                    yield PAUSED
                    break
            loop.close(None)
            graph._sample_verify(loop)
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            loop.close(error)
