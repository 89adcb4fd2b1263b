"""Driving a step beyond the plain fold: breakpoints (``interrupt_before`` /
``interrupt_after``), running a step's tasks while passing on what they stream, and the
small argument helpers of ``batch``."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from wayline.errors import WaylineError
from wayline.graph.algo import PULL, values_of
from wayline.graph.streaming import NAMESPACED, EventBus, TaskDone, task_result

if TYPE_CHECKING:
    from wayline.graph.loop import ExecTask, RunLoop, TaskOutcome

__all__ = [
    "aexecute_live",
    "breakpoint_sets",
    "configs",
    "execute_live",
    "stops_after",
    "stops_before",
    "task_input",
]


def breakpoint_sets(
    nodes: Mapping[str, Any],
    before: Sequence[str] | str | None,
    after: Sequence[str] | str | None,
    default_before: tuple[str, ...],
    default_after: tuple[str, ...],
) -> tuple[frozenset[str], frozenset[str]]:
    """The nodes to pause before and after: given at invoke, else compiled in."""

    def names(given: Sequence[str] | str | None, default: tuple[str, ...]) -> frozenset[str]:
        if given is None:
            return frozenset(default)
        if given == "*" or (not isinstance(given, str) and list(given) == ["*"]):
            return frozenset(nodes)
        return frozenset([given] if isinstance(given, str) else given)

    return names(before, default_before), names(after, default_after)


def execute_live(
    loop: RunLoop,
    tasks: list[ExecTask],
    pool: ThreadPoolExecutor,
    bus: EventBus,
    run_task: Callable[[RunLoop, ExecTask], TaskOutcome],
) -> Generator[tuple[str, Any], None, list[TaskOutcome]]:
    """Run a step's tasks in threads and pass on what they emit as they emit it; waits on
    the bus (a blocking queue), never polls."""

    def run(task: ExecTask) -> None:
        try:
            bus.queue.put(TaskDone(run_task(loop, task), None))
        except BaseException as exc:
            bus.queue.put(TaskDone(None, exc))

    for t in tasks:
        pool.submit(contextvars.copy_context().run, run, t)
    outcomes: list[TaskOutcome] = []
    failure: BaseException | None = None
    finished = 0
    while finished < len(tasks):
        item = bus.queue.get()
        if isinstance(item, TaskDone):
            finished += 1
            if item.error is not None:
                failure = failure or item.error
                continue
            loop.task_done(item.outcome)
            outcomes.append(item.outcome)
            if loop.invocation.chat_callbacks is not None:
                loop.invocation.chat_callbacks.node_output(item.outcome)
            if (event := loop.stream_finished(item.outcome)) is not None:
                bus.put_own(event)  # after the messages node_output put there
            if bus.wants_tasks:  # its result after its update, before a slower peer's
                bus.put_own(("tasks", task_result(item.outcome)))
            continue
        yield (NAMESPACED, item)
    yield from bus.drain()  # emitted by the last task just before it finished
    if failure is not None:
        raise failure
    return outcomes


async def aexecute_live(bus: EventBus, running: asyncio.Future[Any]) -> AsyncGenerator[Any, None]:
    """The async driver's ``execute_live``: pass on what a step's tasks emit while
    ``running`` (the step) is not done. Woken by the bus on every put (thread-safe), not by
    polling; the step's result stays in ``running``."""
    aio = asyncio.get_running_loop()
    wake = asyncio.Event()

    def waker() -> None:
        aio.call_soon_threadsafe(wake.set)

    bus.waker = waker
    try:
        while True:
            wake.clear()
            for event in bus.drain():
                yield event
            if running.done():
                break
            waiting = asyncio.ensure_future(wake.wait())
            await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
        for event in bus.drain():  # put just before the step ended
            yield event
    finally:
        bus.waker = None
        if not running.done():  # the stream was closed: the step's nodes get
            running.cancel()  # CancelledError, and have stopped when this returns
            await asyncio.gather(running, return_exceptions=True)


def stops_before(
    loop: RunLoop, tasks: list[ExecTask], before: frozenset[str], resuming: bool
) -> bool:
    """``interrupt_before``: pause before a step that runs a listed node, except the
    first step of an invocation that continues the run without new input, or with a
    ``Command`` (it is the one paused there; as LangGraph, a ``Command(update=...)`` or
    ``Command(goto=...)`` given at a breakpoint goes on past it)."""
    if not before or (resuming and loop.steps_run == 0):
        return False
    return any(t.spec.name in before for t in tasks)


def stops_after(loop: RunLoop, outcomes: list[TaskOutcome], after: frozenset[str]) -> bool:
    """``interrupt_after``: pause after a step that ran a listed node (unless the run has
    finished or asked a question anyway)."""
    if not after or not loop.next_tasks or loop.raised:
        return False
    return bool(loop.step_nodes & after)  # what ran now and what had finished before


def task_input(loop: RunLoop, task: ExecTask) -> Any:
    if task.spec.path[0] == PULL:
        return loop.graph.schema.to_node_input(values_of(loop.channels))
    return task.spec.arg


def configs(
    config: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None, n: int
) -> list[Mapping[str, Any] | None]:
    if config is None or isinstance(config, Mapping):
        return [config] * n
    if len(config) != n:
        raise WaylineError(f"batch got {n} inputs and {len(config)} configs; give one each")
    return list(config)
