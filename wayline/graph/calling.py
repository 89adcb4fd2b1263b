"""How a task's node is called: its input, the parameters LangGraph would inject
(``config``, ``runtime``, ``writer``, ``store``), and the task-scoped helpers
(``get_config``, ``get_runtime``, ``get_stream_writer``) set for the call."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wayline.graph.algo import PULL, values_of
from wayline.runtime import Runtime

if TYPE_CHECKING:
    from wayline.graph.context import TaskScope
    from wayline.graph.loop import ExecTask, RunLoop

__all__ = ["Invocation", "node_call"]


@dataclasses.dataclass(slots=True)
class Invocation:
    """What one invocation hands the nodes it runs, beside their state: LangGraph's runtime
    context, the functional API's ``previous``, and where streamed events go."""

    context: Any = None
    previous: Any = None
    emit: Callable[[tuple[str, ...], str, Any], None] | None = None
    """The stream event sink (None: nothing streams)."""
    namespace: tuple[str, ...] = ()
    """A subgraph's place under its parent, as LangGraph's stream namespaces name it."""
    chat_callbacks: Any = None
    """Chat-model token streaming (stream mode ``messages``), when asked for."""


def node_call(loop: RunLoop, task: ExecTask) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The callable and positional arguments for ``task``; called inside the task's scope
    (the driver set it), which this fills with the config, runtime and stream writer."""
    spec = loop.graph.nodes[task.spec.name]
    arg = task.spec.arg
    if task.spec.path[0] == PULL:
        values = values_of(loop.channels)
        schema = loop.graph.schema
        if spec.input_schema is not None and spec.input_schema is not schema.cls:
            keys = loop.graph.node_input_keys(task.spec.name)
            values = {k: v for k, v in values.items() if k in keys}
            arg = (
                dict(values)
                if schema.kind in ("typeddict", "dict")
                else spec.input_schema(**values)
            )
        else:
            arg = schema.to_node_input(values)
    scope = task.scope
    scope.loop = loop
    scope.config = task.ctx
    scope.node = task.spec.name
    scope.writer = _writer(loop, task)
    scope.runtime = None  # built on first use (get_runtime or a runtime parameter)
    args = (arg, task.ctx) if spec.takes_ctx else (arg,)
    kwargs = {param: _injected(what, task, scope) for param, what in spec.inject}
    fn = functools.partial(spec.fn, **kwargs) if kwargs else spec.fn
    chat = loop.invocation.chat_callbacks
    if chat is not None:
        fn = chat.wrap(fn, task, spec.is_async)
    return fn, args


def runtime_of(scope: TaskScope) -> Runtime[Any]:
    """The task's ``Runtime``, built once: most nodes never ask for it."""
    if scope.runtime is None:
        loop = scope.loop
        scope.runtime = Runtime(
            context=loop.invocation.context,
            store=store_of(scope),
            stream_writer=scope.writer or _drop,
            previous=loop.invocation.previous,
        )
    return scope.runtime


def _injected(what: str, task: ExecTask, scope: TaskScope) -> Any:
    if what == "runtime":
        return runtime_of(scope)
    if what == "config":
        return task.ctx
    if what == "writer":
        return scope.writer
    return store_of(scope)  # "store": LangGraph's long-term memory


def store_of(scope: TaskScope) -> Any:
    """The task's long-term memory store (None: the graph has none): ``wayline.memory``'s
    view whose writes commit with the task's step, or the graph's store as it is."""
    loop = scope.loop
    return None if loop is None else loop.memory_view(scope)


def _writer(loop: RunLoop, task: ExecTask) -> Callable[[Any], None]:
    emit = loop.invocation.emit
    if emit is None:
        return _drop
    namespace = loop.invocation.namespace

    def write(chunk: Any) -> None:
        emit(namespace, "custom", chunk)

    return write


def _drop(chunk: Any) -> None:
    """Nothing streams ``custom``."""
