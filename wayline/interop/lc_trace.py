"""The runs an invocation shows the langchain-core callbacks its config names: a LangGraph
graph is a Runnable, so a tracer in ``config["callbacks"]`` sees one chain run per call
(ended with the call's output, without its pending questions, or its error), a child run
per node call (tagged ``graph:step:N``) and, under a node, a child run per ``@task`` that
runs. Runnables called inside a node (a chat model) nest under the node's run.

Tracing is on the side of the durable path: nothing of it is stored or replayed (a task
whose result is on record is not run, so not traced). langchain-core is imported only when
callbacks are given (they are its objects)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from uuid import UUID

__all__ = [
    "EventStream",
    "astream_events",
    "atraced",
    "end_root",
    "root_of",
    "start_root",
    "traced",
    "traced_node",
    "traced_task",
    "traces",
]

_RUN: contextvars.ContextVar[Any] = contextvars.ContextVar("wayline_lc_run", default=None)
"""The chain run of the node (or ``@task``) running in this context, and its metadata."""


def traces(config: Any) -> bool:
    """Whether a call with ``config`` is traced: it names callbacks (a config that is not
    a dict is refused later, by the call)."""
    return isinstance(config, Mapping) and bool(config.get("callbacks"))


def start_root(config: Mapping[str, Any] | None, name: str, input: Any) -> Any:
    """The run manager of the call's root chain run, or None (no callbacks)."""
    handlers = (config or {}).get("callbacks")
    if not handlers:
        return None
    from langchain_core.callbacks.manager import CallbackManager

    manager = CallbackManager.configure(
        handlers,
        inheritable_tags=(config or {}).get("tags"),
        inheritable_metadata=(config or {}).get("metadata"),
    )
    # as a Runnable's: the configurable's plain values in the metadata (LangGraph's too)
    conf = (config or {}).get("configurable") or {}
    given = {
        k: v
        for k, v in conf.items()
        if not k.startswith("__") and isinstance(v, str | int | float | bool)
    }
    manager.add_metadata({**given, "ls_integration": "langgraph"}, inherit=True)
    inputs = input if isinstance(input, Mapping) else {"input": input}
    run_id = (config or {}).get("run_id")  # the caller's choice (astream_events makes one)
    return manager.on_chain_start(
        None, dict(inputs), name=name, run_id=run_id if isinstance(run_id, UUID) else None
    )


class EventStream:
    """``astream_events`` for a graph (anything with LangGraph's ``astream``)."""

    def astream_events(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        version: str = "v2",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """LangGraph's event stream (``version="v2"``): the runs of the graph, of its nodes
        and of what they call (a chat model's tokens too), from langchain-core's callbacks."""
        return astream_events(self, input, config, version, kwargs)


def astream_events(
    graph: Any, input: Any, config: Any, version: str, kwargs: Mapping[str, Any]
) -> AsyncIterator[Any]:
    """LangGraph's ``astream_events``: langchain-core's event stream (``version="v2"``)
    over the callbacks of ``graph.astream``, whose runs ``traced`` shows."""
    if version != "v2":
        from wayline.errors import NotSupportedError

        raise NotSupportedError(
            f"astream_events(version={version!r}) is not supported by wayline: pass "
            "version='v2' (langchain-core's current event format)"
        )
    from langchain_core.tracers.event_stream import _astream_events_implementation_v2

    return _astream_events_implementation_v2(graph, input, config, **kwargs)


def end_root(run: Any, output: Any = None, error: BaseException | None = None) -> None:
    """End the root run ``start_root`` began (None: nothing to end)."""
    if run is None:
        return
    if error is not None:
        run.on_chain_error(error)
        return
    if isinstance(output, Mapping):
        output = {k: v for k, v in output.items() if k != "__interrupt__"}
    run.on_chain_end(output)


def traced(
    stream: Callable[..., Iterator[Any]],
    result: Callable[[Any], Any],
    name: str,
    input: Any,
    config: Any,
    kwargs: Mapping[str, Any],
) -> Iterator[Any]:
    """A graph's ``stream`` as a root chain run: ``stream`` is given ``trace=`` (see
    ``root_of``) and the run ends with ``result`` of its last loop, or with its error."""
    root = start_root(config, name, input)
    loops: list[Any] = []
    try:
        yield from stream(input, config, **kwargs, trace=(root, loops))
    except BaseException as exc:
        end_root(root, error=exc)
        raise
    end_root(root, result(loops[-1]) if loops else None)


async def atraced(
    stream: Callable[..., AsyncIterator[Any]],
    result: Callable[[Any], Any],
    name: str,
    input: Any,
    config: Any,
    kwargs: Mapping[str, Any],
) -> AsyncIterator[Any]:
    """``traced`` for ``astream``."""
    root = start_root(config, name, input)
    loops: list[Any] = []
    try:
        inner = stream(input, config, **kwargs, trace=(root, loops))
        async with contextlib.aclosing(inner):  # type: ignore[type-var]
            async for item in inner:
                yield item
    except BaseException as exc:
        end_root(root, error=exc)
        raise
    end_root(root, result(loops[-1]) if loops else None)


def root_of(kwargs: Mapping[str, Any], loop: Any) -> Any:
    """The root run a traced stream hands the loop it makes (None: not traced); the loop
    is kept for the run's output."""
    trace = kwargs.get("trace")
    if trace is None:
        return None
    root, loops = trace
    loops.append(loop)
    return root


def traced_node(
    root: Any,
    fn: Callable[..., Any],
    is_async: bool,
    name: str,
    inputs: Any,
    tag: str,
    metadata: Mapping[str, Any],
) -> Callable[..., Any]:
    """``fn`` (a node, or a ``@task``'s attempts) run as a child chain run of ``root`` (a
    run manager), named ``name``, tagged ``tag``; inner runnables and tasks nest under it."""

    def start() -> Any:
        manager = root.get_child(tag)
        manager.add_metadata(dict(metadata), inherit=True)  # inner runs: their node
        return manager.on_chain_start(None, inputs, name=name)

    def finish(run: Any, out: Any) -> Any:
        if inspect.isawaitable(out):  # a node returning an awaitable is awaited later
            return out
        for handler in run.handlers:  # an event stream's: the output as the run's chunk
            tap = getattr(handler, "tap_output_iter", None)
            if tap is not None:
                for _ in tap(run.run_id, iter([out])):
                    pass
        run.on_chain_end(out)
        return out

    if is_async:

        @functools.wraps(fn)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            run = start()
            tokens = _enter(run, metadata)
            try:
                out = await fn(*args, **kwargs)
            except BaseException as exc:
                run.on_chain_error(exc)
                raise
            finally:
                _leave(tokens)
            return finish(run, out)

        return acall

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        run = start()
        tokens = _enter(run, metadata)
        try:
            out = fn(*args, **kwargs)
        except BaseException as exc:
            run.on_chain_error(exc)
            raise
        finally:
            _leave(tokens)
        return finish(run, out)

    return call


def traced_task(
    fn: Callable[[], Any], name: str, task: Callable[..., Any], args: Any, kwargs: Any
) -> Callable[[], Any]:
    """``fn`` (a ``@task`` call's attempts) traced under the running node's run, with the
    call's arguments by name as its inputs (LangGraph's); ``fn`` itself without a run."""
    node = _RUN.get()
    if node is None:
        return fn
    parent, meta = node
    try:
        bound = inspect.signature(task).bind(*args, **kwargs)
        bound.apply_defaults()
        inputs: Any = dict(bound.arguments)
    except (TypeError, ValueError):  # the call itself fails: it says so when it runs
        inputs = {"args": list(args), **kwargs}
    meta = {**meta, "langgraph_node": name}  # the step is its node's
    return traced_node(parent, fn, False, name, inputs, "seq:step:1", meta)


def _enter(run: Any, metadata: Mapping[str, Any]) -> tuple[Any, Any]:
    """Make ``run`` the parent of what runs in this context: the node's tasks, and the
    runnables it calls (through langchain-core's child config, merged with any handler
    already there: the ``messages`` stream's)."""
    from langchain_core.runnables.config import var_child_runnable_config

    outer = dict(var_child_runnable_config.get() or {})
    child = run.get_child("seq:step:1")  # LangGraph's node: a sequence, the function first
    given = outer.get("callbacks")
    for handler in given if isinstance(given, list) else []:
        child.add_handler(handler, inherit=True)
    child_config: Any = {**outer, "callbacks": child}
    return _RUN.set((run, metadata)), var_child_runnable_config.set(child_config)


def _leave(tokens: tuple[Any, Any]) -> None:
    from langchain_core.runnables.config import var_child_runnable_config

    run_token, config_token = tokens
    var_child_runnable_config.reset(config_token)
    _RUN.reset(run_token)
