"""``stream``/``astream`` called from inside a running node: the graph runs as that node's
subgraph (as ``invoke`` does there, see ``subgraph``), and its chunks go two ways, as in
LangGraph, where a graph streamed in a node inherits its parent's callbacks:

- to the caller of ``stream``, formatted for the modes it asked (namespaces relative to the
  streamed graph: its own nodes' chunks have namespace ``()``);
- to the parent's stream, when the parent streams, under the child's namespace (so the
  parent's ``stream(subgraphs=True)`` shows, for instance, the messages of an agent that a
  node streams, and ``subgraphs=False`` shows none of them).

The child runs on a thread of its own (with the node's context, so it is the node's
subgraph) while the caller's generator waits on a queue: chunks reach the caller as the
child emits them, not when it ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from wayline.errors import WaylineError
from wayline.graph.context import current_scope
from wayline.graph.run_config import own_thread
from wayline.graph.streaming import NAMESPACED, Formatter
from wayline.graph.subgraph import CHILD_TAP, run_child

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["ChildTap", "astream_child", "called_from_node", "stream_child"]

Emit = Callable[[tuple[str, ...], str, Any], None]


def called_from_node(config: Mapping[str, Any] | None) -> bool:
    """Whether ``stream`` runs inside a node as its subgraph: called from a running task
    with no thread of its own, or with the node's own config (whose thread is the running
    run's, as a LangGraph node passes its ``config`` on to the graph it streams)."""
    try:
        loop = current_scope().loop
    except WaylineError:
        return False
    if loop is None:
        return False
    conf = (config or {}).get("configurable") or {}
    thread = conf.get("thread_id")
    return thread is None or thread == "" or own_thread(thread, loop)


class _Done:
    __slots__ = ("error", "output")

    def __init__(self, output: Any, error: BaseException | None) -> None:
        self.output = output
        self.error = error


class ChildTap:
    """The stream sink of a child run streamed from a node: queues what the caller of
    ``stream`` sees and passes every event on to the parent's sink."""

    subgraphs = True
    """Read by the chat stream: forward a namespaced token (the tap filters by itself)."""

    def __init__(self, modes: set[str], subgraphs: bool) -> None:
        self.modes = modes
        self.nested = subgraphs
        self.events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.waker: Callable[[], None] | None = None
        """Called after each put: the async caller's way to wake up (thread-safe)."""
        self.parent: Emit | None = None
        self.namespace: tuple[str, ...] = ()

    def attach(self, loop: Any, parent: Any) -> None:
        """Become the sink of ``loop`` (the child's), a subgraph of ``parent`` (a loop)."""
        self.parent = parent.invocation.emit
        self.namespace = loop.invocation.namespace
        loop.invocation.emit = self
        chat = parent.invocation.chat_callbacks
        if "messages" in self.modes or chat is not None:
            from wayline.interop.lc_stream import ChatStream

            loop.invocation.chat_callbacks = ChatStream(self, getattr(chat, "given", None))

    def put(self, item: Any) -> None:
        self.events.put(item)
        if self.waker is not None:
            self.waker()

    def own(self, mode: str, chunk: Any) -> None:
        """A chunk the child's loop yields (its values, updates, tasks)."""
        self.put((None, mode, chunk))

    def __call__(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        """What the child's nodes (and their subgraphs) emit."""
        if self.parent is not None:
            self.parent(namespace, mode, chunk)
        inner = namespace[len(self.namespace) :]
        if not inner or self.nested:
            self.put((inner, mode, chunk))


def _start(graph: CompiledGraph, input: Any, context: Any, tap: ChildTap) -> threading.Thread:
    def work() -> None:
        CHILD_TAP.set(tap)
        try:
            done = _Done(run_child(graph, input, context=context), None)
        except BaseException as exc:  # the caller re-raises it (an interrupt, a failure)
            done = _Done(None, exc)
        tap.put(done)

    ctx = contextvars.copy_context()  # the node's: its task scope makes this a subgraph
    thread = threading.Thread(target=ctx.run, args=(work,), name="wayline-child", daemon=True)
    thread.start()
    return thread


def _format(fmt: Formatter, item: Any) -> Iterator[Any]:
    inner, mode, chunk = item
    if inner is None:
        yield from fmt(mode, chunk)
    else:
        yield from fmt(NAMESPACED, (inner, mode, chunk))


def _formatter(graph: CompiledGraph, modes: set[str], single: bool, subgraphs: bool) -> Formatter:
    return Formatter(modes, single, subgraphs, graph.schema.visible, lambda: 0)


def stream_child(
    graph: CompiledGraph,
    input: Any,
    modes: set[str],
    single: bool,
    subgraphs: bool,
    context: Any = None,
) -> Iterator[Any]:
    """``graph.stream(...)`` inside a node: run it as the node's subgraph, yielding its
    chunks as they come."""
    tap = ChildTap(modes, subgraphs)
    thread = _start(graph, input, context, tap)
    fmt = _formatter(graph, modes, single, subgraphs)
    try:
        while not isinstance(item := tap.events.get(), _Done):
            yield from _format(fmt, item)
    finally:  # a caller that stops early still waits for the child: no write after the node
        thread.join()
    if item.error is not None:
        raise item.error


async def astream_child(
    graph: CompiledGraph,
    input: Any,
    modes: set[str],
    single: bool,
    subgraphs: bool,
    context: Any = None,
) -> AsyncGenerator[Any, None]:
    """``graph.astream(...)`` inside a node: as ``stream_child``, awaiting each chunk."""
    aio = asyncio.get_running_loop()
    wake = asyncio.Event()
    tap = ChildTap(modes, subgraphs)

    def waker() -> None:
        aio.call_soon_threadsafe(wake.set)

    tap.waker = waker
    thread = _start(graph, input, context, tap)
    fmt = _formatter(graph, modes, single, subgraphs)
    item: Any = None
    try:
        while not isinstance(item, _Done):
            wake.clear()
            try:
                item = tap.events.get_nowait()
            except queue.Empty:
                await wake.wait()
                continue
            if not isinstance(item, _Done):
                for out in _format(fmt, item):
                    yield out
    finally:  # as stream_child: the child has finished when this returns
        await asyncio.to_thread(thread.join)
    if item.error is not None:
        raise item.error
