"""The functional API, as ``langgraph.func``: ``@entrypoint`` and ``@task``.

An entrypoint is a graph of one node over three values: the input, the return value and
what is saved for the next invocation on the same thread (``previous``). Its runs are
runs like any other (checkpointed, resumable in a fresh process, served by workers).

A ``@task`` call inside an entrypoint returns a future and runs in a thread; its result is
recorded durably when it finishes (a ``ctx.record`` keyed by the entrypoint's task, the task
name and the call's position), so a task that finished never runs again: not on resume
after an ``interrupt``, not after the worker was killed. Calls are numbered in the order the
entrypoint makes them, which is deterministic for deterministic code, as LangGraph requires.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
import threading
import typing
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypedDict, TypeVar

from wayline.codec import default_codec
from wayline.effects.retry import RetryPolicy
from wayline.errors import GraphError, GraphInterrupt, NotSupportedError, WaylineError
from wayline.graph.builder import StateGraph
from wayline.graph.cache import BaseCache, CachePolicy, task_key, task_namespace
from wayline.graph.calling import runtime_of, store_of
from wayline.graph.compiled import CompiledGraph
from wayline.graph.context import (
    TaskScope,
    current_scope,
    reset_scope,
    scoped_index,
    set_scope,
)
from wayline.graph.invoke_modes import alisted_modes, listed_modes
from wayline.graph.jsonschema import type_schema
from wayline.graph.schema import register_hint_types
from wayline.graph.timeouts import Pulse, TimeoutPolicy, check_async, timed
from wayline.graph.types import END, START, Command, StateSnapshot
from wayline.ids import derive_id
from wayline.interop.lc_trace import EventStream, traced_task

__all__ = ["entrypoint", "task"]

T = TypeVar("T")
CANCEL_WAIT = 5.0
"""Seconds ``TaskFuture.cancel`` waits for a running async task to stop."""
_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="wayline-task")


class _EntrypointState(TypedDict, total=False):
    input: Any
    output: Any
    save: Any


S = TypeVar("S")


@dataclasses.dataclass(frozen=True, slots=True)
class _Final(Generic[T, S]):
    """``entrypoint.final(value=..., save=...)``: return ``value``, keep ``save`` as the
    next invocation's ``previous``."""

    value: Any
    save: Any


class TaskFuture(Future[Any]):
    """What calling a ``@task`` returns: ``.result()`` in a sync entrypoint, ``await`` in an
    async one."""

    def __init__(self) -> None:
        super().__init__()
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None

    def __await__(self) -> Any:
        return asyncio.wrap_future(self).__await__()

    def cancel(self) -> bool:
        """Cancel the call, as LangGraph cancels a task's future: a running async task
        gets ``CancelledError`` where it awaits, and records no result (a resume runs it
        again); a sync task already running finishes, its result unused."""
        with self._condition:
            running = self._running
            if not super().cancel():  # already finished
                return False
        if running is not None:
            loop, inner = running
            stopped = threading.Event()

            def stop() -> None:  # on the task's own loop
                inner.add_done_callback(lambda _: stopped.set())
                inner.cancel()

            try:
                loop.call_soon_threadsafe(stop)
            except RuntimeError:  # its loop closed: the task has just finished
                stopped.set()
            # As on LangGraph's one event loop, the task sees its CancelledError before
            # the caller goes on (bounded: a task may catch it and keep running).
            stopped.wait(CANCEL_WAIT)
        return True

    async def _run(self, value: Any) -> Any:
        """Await an async task's coroutine where ``cancel`` can reach it."""
        inner = asyncio.current_task()
        assert inner is not None
        with self._condition:
            if self.cancelled():
                value.close()
                raise asyncio.CancelledError
            self._running = (asyncio.get_running_loop(), inner)
        try:
            return await value
        finally:
            with self._condition:
                self._running = None


class _Task:
    """A function decorated with ``@task``: calling it in an entrypoint returns a future."""

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        retry_policy: RetryPolicy | None,
        timeout: TimeoutPolicy | None = None,
        cache_policy: CachePolicy | None = None,
    ) -> None:
        self.fn = fn
        self.cache_policy = cache_policy
        """Reuse the result of an earlier call on the same arguments from the entrypoint's
        ``cache=`` (a hit is recorded as the call's result, so a replay reads the run)."""
        inner = fn.func if isinstance(fn, functools.partial) else fn  # as LangGraph names it
        self.name: str = str(name or getattr(inner, "__name__", "task"))
        self.retry_policy = retry_policy
        check_async(self.name, timeout, inspect.iscoroutinefunction(fn))
        self.timeout = timeout
        functools.update_wrapper(self, fn)
        register_annotations(fn)

    def __call__(self, *args: Any, **kwargs: Any) -> TaskFuture:
        try:
            scope = current_scope()
        except WaylineError:
            raise WaylineError(
                f"task {self.name!r} was called outside an entrypoint: call tasks from inside "
                "an @entrypoint function (or a node)"
            ) from None
        seq = scope.task_calls.get(self.name, 0)
        scope.task_calls[self.name] = seq + 1
        ctx = scope.config
        ledger = getattr(ctx, "ledger", None)
        if ledger is None:
            raise WaylineError(f"task {self.name!r} needs a running task to record its result")
        loop = scope.loop
        name = f"task:{scope.task_id}:{self.name}:{seq}"  # nested calls record apart
        ran: list[bool] = []

        cache = None if loop is None else loop.graph.cache
        policy = self.cache_policy if cache is not None else None
        key = None if policy is None else task_key(policy, task_namespace(self.fn), args, kwargs)
        cached: list[bool] = []
        future: TaskFuture = TaskFuture()

        def work() -> Any:
            if future.cancelled():  # cancelled before it started: it never runs
                raise asyncio.CancelledError
            ran.append(True)
            attempts = functools.partial(self._attempts, args, kwargs, future)
            run = traced_task(attempts, self.name, self.fn, args, kwargs)
            if cache is None or policy is None or key is None:
                return run()
            if key in (hit := cache.get([key])):
                cached.append(True)
                return hit[key]
            value = run()
            cache.set({key: (value, policy.ttl)})
            return value

        # The task's own interrupt scope: its questions have ids of their own and are
        # answered by id, whichever tasks ran before it in this attempt.
        inner = TaskScope(
            derive_id(scope.task_id, "task", self.name, seq),
            [],
            config=scope.config,
            writer=scope.writer,
            answers=scope.answers,
            loop=loop,
        )
        while (asked := inner.interrupt_id(len(inner.resume))) in scope.answers:
            inner.resume.append(scope.answers[asked])

        def run() -> Any:
            token = set_scope(inner)
            try:
                value = ledger.record(name, work)
            except GraphInterrupt as signal:
                indexes = [scoped_index(i.id) for i in signal.interrupts]
                raise GraphInterrupt(signal.interrupts, indexes=indexes) from None
            finally:
                reset_scope(token)
            if ran and not cached and loop is not None and loop.invocation.node_finished:
                loop.invocation.node_finished(self.name)
            if ran and loop is not None and loop.invocation.emit is not None:
                update = (
                    {self.name: value, "__metadata__": {"cached": True}}
                    if cached
                    else {self.name: value}
                )
                loop.invocation.emit(loop.invocation.namespace, "updates", update)
            return value

        context = contextvars.copy_context()

        def settle() -> None:
            try:
                value = context.run(run)
            except BaseException as exc:  # an interrupt inside the task travels with it
                if not future.cancelled():
                    future.set_exception(exc)
                return
            if not future.cancelled():
                future.set_result(value)

        _POOL.submit(settle)
        return future

    def clear_cache(self, cache: BaseCache[Any]) -> None:
        """Forget this task's cached results in ``cache``."""
        if self.cache_policy is not None:
            cache.clear([task_namespace(self.fn)])

    async def aclear_cache(self, cache: BaseCache[Any]) -> None:
        self.clear_cache(cache)

    def _attempts(self, args: tuple[Any, ...], kwargs: dict[str, Any], future: TaskFuture) -> Any:
        attempt = 0
        while True:
            attempt += 1
            try:
                value = self.fn(*args, **kwargs)
                if inspect.isawaitable(value):  # an async task runs on this thread's own loop
                    if self.timeout is not None:  # each attempt bounded, as a node's
                        value = timed(value, self.timeout, self.name, Pulse(self.timeout))
                    value = asyncio.run(future._run(value))
                return value
            except Exception as exc:
                policy = self.retry_policy
                if policy is None or not policy.should_retry(attempt, exc):
                    raise
                import time

                time.sleep(policy.delay(attempt))


def task(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: Any = None,
    timeout: Any = None,
) -> Any:
    """Decorate a function as a task: ``@task`` or ``@task(name=..., retry_policy=...)``;
    ``timeout`` (an async task's ``TimeoutPolicy``) bounds each attempt; ``cache_policy``
    (with the entrypoint's ``cache=``) reuses the result of a call on the same arguments."""
    policy = TimeoutPolicy.coerce(timeout)  # a bad timeout fails here, as LangGraph's
    if isinstance(retry_policy, Sequence):
        retry_policy = retry_policy[0] if retry_policy else None

    def wrap(f: Callable[..., Any]) -> _Task:
        return _Task(f, name, retry_policy, policy, cache_policy)

    return wrap(fn) if fn is not None else wrap


class entrypoint:
    """``@entrypoint(checkpointer=...)``: turn a function into a runnable, durable
    workflow. The function takes the input, and optionally ``previous``, ``config``,
    ``writer`` and ``runtime``; it may call ``interrupt`` and ``@task`` functions."""

    final = _Final

    def __init__(
        self,
        checkpointer: Any = None,
        store: Any = None,
        cache: Any = None,
        context_schema: type | None = None,
        cache_policy: Any = None,
        retry_policy: RetryPolicy | None = None,
        timeout: Any = None,
        **kwargs: Any,
    ) -> None:
        self.timeout = TimeoutPolicy.coerce(timeout)  # bounds each attempt (async only)
        if cache_policy is not None:
            raise GraphError(
                "entrypoint(cache_policy=...) is not supported by wayline: give the tasks "
                "it calls @task(cache_policy=...) and the entrypoint cache=..."
            )
        self.cache = cache
        self.checkpointer = checkpointer
        self.memory_store = store
        self.context_schema = context_schema
        self.retry_policy = retry_policy
        self.kwargs = kwargs

    def __call__(self, fn: Callable[..., Any]) -> EntrypointGraph:
        name = getattr(fn, "__name__", "entrypoint")
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise NotSupportedError(
                f"@entrypoint {name!r} is a generator, which an entrypoint cannot be (as in "
                "LangGraph): return the result, and stream progress with get_stream_writer()"
            )
        params = set(inspect.signature(fn).parameters)
        register_annotations(fn)
        is_async = inspect.iscoroutinefunction(fn)
        check_async(name, self.timeout, is_async)

        def node_kwargs(state: Mapping[str, Any], config: Any) -> dict[str, Any]:
            scope = current_scope()
            given = {
                "previous": state.get("save"),
                "config": config,
                "writer": scope.writer,
                "runtime": runtime_of(scope).override(previous=state.get("save")),
                "store": store_of(scope),
            }
            return {k: v for k, v in given.items() if k in params}

        if is_async:

            async def anode(state: Mapping[str, Any], config: Any) -> dict[str, Any]:
                return _written(await fn(state.get("input"), **node_kwargs(state, config)))

            node: Callable[..., Any] = anode
        else:

            def node(state: Mapping[str, Any], config: Any) -> dict[str, Any]:
                return _written(fn(state.get("input"), **node_kwargs(state, config)))

        builder = StateGraph(_EntrypointState, self.context_schema, name=name)
        builder.add_node(name, node, retry_policy=self.retry_policy, timeout=self.timeout)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
        graph = builder.compile(
            self.checkpointer, name=name, store=self.memory_store, cache=self.cache
        )
        graph.trace_name = "LangGraph"  # as LangGraph's entrypoint (its node is ``name``)
        return EntrypointGraph(graph, name, fn)


def register_annotations(fn: Callable[..., Any]) -> None:
    """Register the dataclasses, pydantic models and enums a task's or entrypoint's
    annotations name with the default codec, as a state schema's are: its input and
    result are stored."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: nothing to register
        return
    for hint in hints.values():
        register_hint_types(hint, default_codec)


def _written(result: Any) -> dict[str, Any]:
    if isinstance(result, _Final):
        return {"output": result.value, "save": result.save}
    return {"output": result, "save": result}


class EntrypointGraph(EventStream):
    """What ``@entrypoint`` returns: invoke, stream and inspect like a compiled graph,
    with the function's input and return value in place of a state dict."""

    def __init__(self, graph: CompiledGraph, name: str, fn: Callable[..., Any]) -> None:
        self.graph = graph
        self.name = name
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__

    @property
    def store(self) -> Any:
        return self.graph.store

    @property
    def checkpointer(self) -> Any:
        return self.graph.store

    @property
    def cache(self) -> Any:
        """The ``cache=`` the entrypoint was given (its tasks' cached results)."""
        return self.graph.cache

    def with_store(self, store: Any) -> EntrypointGraph:
        return EntrypointGraph(self.graph.with_store(store), self.name, self.__wrapped__)

    @listed_modes
    def invoke(self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        out: Any = None
        for chunk in self.stream(input, config, stream_mode="values", **kwargs):
            out = chunk
        return _listed(out)

    @alisted_modes
    async def ainvoke(
        self, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        out: Any = None
        async for chunk in self.astream(input, config, stream_mode="values", **kwargs):
            out = chunk
        return _listed(out)

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        modes, single = _modes(stream_mode)
        config = self._fresh(input, config)
        inner = self.graph.stream(_input(input), config, stream_mode=[*modes, *_ALWAYS], **kwargs)
        adapt = _Adapter(self.name, modes, single)
        for mode, chunk in inner:
            yield from adapt(mode, chunk)

    async def astream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        modes, single = _modes(stream_mode)
        config = self._fresh(input, config)
        inner = self.graph.astream(_input(input), config, stream_mode=[*modes, *_ALWAYS], **kwargs)
        adapt = _Adapter(self.name, modes, single)
        async for mode, chunk in inner:
            for item in adapt(mode, chunk):
                yield item

    def _fresh(self, input: Any, config: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """Without a checkpointer nothing is kept between invocations, as in LangGraph:
        new input starts a run of its own (``previous`` is None), whatever the thread id."""
        if self.graph.requires_thread_id or input is None or isinstance(input, Command):
            return config
        conf = dict((config or {}).get("configurable") or {})
        conf["thread_id"] = uuid.uuid4().hex
        return {**(config or {}), "configurable": conf}

    def batch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        configs = config if isinstance(config, Sequence) else [config] * len(inputs)
        return [self.invoke(i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]

    def update_state(
        self, config: Mapping[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """Write ``values`` as the function's return value, as LangGraph does: the next
        call gets them as ``previous`` (``entrypoint.final`` splits the two)."""
        return self.graph.update_state(config, _written(values), as_node or self.name)

    async def aupdate_state(
        self, config: Mapping[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        return self.update_state(config, values, as_node)

    def get_state(self, config: Mapping[str, Any], **kwargs: Any) -> StateSnapshot:
        snapshot = self.graph.get_state(config)
        values = snapshot.values.get("output") if snapshot.values else {}
        return dataclasses.replace(snapshot, values=values)  # type: ignore[arg-type]

    def get_state_history(self, config: Mapping[str, Any], **kwargs: Any) -> Iterator[Any]:
        for snapshot in self.graph.get_state_history(config, **kwargs):
            values = snapshot.values.get("output") if snapshot.values else {}
            yield dataclasses.replace(snapshot, values=values)  # type: ignore[arg-type]

    async def aget_state(self, config: Mapping[str, Any], **kwargs: Any) -> StateSnapshot:
        return self.get_state(config, **kwargs)

    async def aget_state_history(
        self, config: Mapping[str, Any], **kwargs: Any
    ) -> AsyncIterator[Any]:
        for snapshot in self.get_state_history(config, **kwargs):
            yield snapshot

    def get_graph(self, *args: Any, **kwargs: Any) -> Any:
        return self.graph.get_graph()

    def get_input_jsonschema(self, config: Any = None) -> Any:
        """The function's input annotation as a JSON schema (``Any`` when it has none)."""
        hints = typing.get_type_hints(self.__wrapped__)
        params = list(inspect.signature(self.__wrapped__).parameters)
        return type_schema(hints.get(params[0], Any) if params else Any, "LangGraphInput")

    def get_output_jsonschema(self, config: Any = None) -> Any:
        hints = typing.get_type_hints(self.__wrapped__)
        returns = hints.get("return", Any)
        if returns is _Final:  # entrypoint.final unparameterized: final[Any, Any]
            returns = Any
        elif typing.get_origin(returns) is _Final:  # final[value, save]: the value's type
            returns = typing.get_args(returns)[0]
        return type_schema(returns, "LangGraphOutput")

    def get_context_jsonschema(self) -> Any:
        return self.graph.get_context_jsonschema()


_ALWAYS = ("updates", "values", "custom")
"""Asked of the inner graph whatever the caller streams: the adapter needs the first two,
and "custom" routes task updates through the live event bus."""


def _listed(out: Any) -> Any:
    """``invoke`` reports questions as a list, as LangGraph's does."""
    if isinstance(out, dict) and isinstance(out.get("__interrupt__"), tuple):
        return {**out, "__interrupt__": list(out["__interrupt__"])}
    return out


def _input(input: Any) -> Any:
    if input is None or isinstance(input, Command):
        return input
    return {"input": input}


def _modes(stream_mode: str | Sequence[str] | None) -> tuple[set[str], bool]:
    mode = stream_mode or "updates"
    return ({mode}, True) if isinstance(mode, str) else (set(mode), False)


class _Adapter:
    """The entrypoint's streams as LangGraph shows them: ``values`` is the return value
    (once the function returned), ``updates`` one chunk per task and one for the
    function, named after it."""

    def __init__(self, name: str, modes: set[str], single: bool) -> None:
        self.name = name
        self.modes = modes
        self.single = single
        self.returned = False

    def __call__(self, mode: str, chunk: Any) -> Iterator[Any]:
        if mode == "updates":
            if self.name in chunk:
                self.returned = True
                chunk = {self.name: (chunk[self.name] or {}).get("output")}
            elif "__start__" in chunk:
                return
        elif mode == "values":
            if "__interrupt__" in chunk:
                # as LangGraph: the last return value (if any) with the questions
                before = chunk.get("output")
                asked = {"__interrupt__": chunk["__interrupt__"]}
                chunk = {**before, **asked} if isinstance(before, dict) else asked
            elif self.returned:
                chunk = chunk.get("output")
                self.returned = False
            else:
                return
        if mode in self.modes:
            yield chunk if self.single else (mode, chunk)
