"""How a task's node is called: its input, the parameters LangGraph would inject
(``config``, ``runtime``, ``writer``, ``store``), and the task-scoped helpers
(``get_config``, ``get_runtime``, ``get_stream_writer``) set for the call."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wayline.graph.algo import PULL, values_of
from wayline.graph.node_runtime import ExecutionInfo, Runtime, ServerInfo
from wayline.graph.timeouts import Pulse
from wayline.managed import managed_value

if TYPE_CHECKING:
    from wayline.graph.context import TaskScope
    from wayline.graph.loop import ExecTask, RunLoop
    from wayline.graph.node import NodeSpec

__all__ = ["Invocation", "node_call", "router_args"]


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
    above: dict[str, str] = dataclasses.field(default_factory=dict)
    """A subgraph's: the checkpoint each graph above it runs it under, by namespace (its
    checkpoints' ``checkpoint_map`` and ``parents``, ``child_names``)."""
    chat_callbacks: Any = None
    """Chat-model token streaming (stream mode ``messages``), when asked for."""
    control: Any = None
    """The caller's ``RunControl`` (``invoke(..., control=...)``): a drain stops the run
    between steps."""
    trace: Any = None
    """The invocation's root chain run for langchain-core callbacks (``lc_trace``), when
    its config names any: node calls are traced as its child runs."""
    node_finished: Callable[[str], None] | None = None
    """Told each node's name as its task finishes (``lg_constants.CONFIG_KEY_NODE_FINISHED``);
    a subgraph's invocation gets its parent's."""


def node_call(
    loop: RunLoop, task: ExecTask, spec: NodeSpec | None = None
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The callable and positional arguments for ``task`` (or for ``spec`` on the task's
    input: its node's error handler); called inside the task's scope (the driver set it),
    which this fills with the config, runtime and stream writer."""
    own = spec is None  # the node itself: a Send's timeout replaces the node's
    spec = spec or loop.graph.nodes[task.spec.name]
    arg = task.spec.arg
    if task.spec.path[0] == PULL:
        values = with_managed(loop, values_of(loop.channels))
        schema = loop.graph.schema
        if spec.input_schema is not None and spec.input_schema is not schema.cls:
            arg = schema.as_input(values, spec.input_schema)
        else:
            arg = schema.to_node_input(values)
    scope = task.scope
    scope.loop = loop
    scope.config = task.ctx
    scope.node = task.spec.name
    scope.writer = _writer(loop, task)
    policy = task.spec.timeout if own and task.spec.timeout is not None else spec.timeout
    scope.pulse = None if policy is None else Pulse(policy)
    if scope.pulse is not None and scope.writer is not _drop:  # a write is progress
        scope.writer = _pulsed(scope.writer, scope.pulse)
    if scope.first_attempt_at is None:
        scope.first_attempt_at = time.time()
    scope.runtime = None  # built on first use (get_runtime or a runtime parameter)
    scope.pushed = []  # a failed attempt's pushed messages are not written
    args = (arg, task.ctx) if spec.takes_ctx else (arg,)
    kwargs = {param: _injected(what, task, scope) for param, what in spec.inject}
    fn = functools.partial(spec.fn, **kwargs) if kwargs else spec.fn
    if loop.invocation.trace is not None:
        fn = _traced(loop, task, fn, arg, spec.is_async)
    chat = loop.invocation.chat_callbacks
    if chat is not None:
        fn = chat.wrap(fn, task, spec.is_async, loop)
    return fn, args


def _traced(
    loop: RunLoop, task: ExecTask, fn: Callable[..., Any], arg: Any, is_async: bool
) -> Callable[..., Any]:
    """The node call as a child run of the invocation's trace, as LangGraph's."""
    from wayline.interop.lc_trace import traced_node

    name = task.spec.name
    meta = {"langgraph_step": task.step, "langgraph_node": name}
    return traced_node(
        loop.invocation.trace, fn, is_async, name, arg, f"graph:step:{task.step}", meta
    )


def router_args(loop: RunLoop, inject: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """What a router's ``config``/``runtime``/``writer``/``store`` parameters get: its
    node's (routing runs in the node's task), or, routing the input, the run's own."""
    from wayline.graph.context import _SCOPE

    scope = _SCOPE.get(None)
    if scope is not None and scope.loop is loop and scope.config is not None:
        values = {
            "config": scope.config,
            "runtime": runtime_of(scope),
            "writer": scope.writer,
            "store": store_of(scope),
        }
    else:
        runtime = Runtime(
            context=loop.invocation.context,
            store=loop.graph.memory_store,
            previous=loop.invocation.previous,
            control=loop.invocation.control,
        )
        values = {
            "config": loop.config,
            "runtime": runtime,
            "writer": _drop,
            "store": loop.graph.memory_store,
        }
    return {param: values[what] for param, what in inject}


def with_managed(loop: RunLoop, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the state's managed keys (``RemainingSteps``...) filled in."""
    managed = loop.graph.schema.managed
    if managed:
        left = loop.step_limit - loop.steps_run
        values.update((k, managed_value(kind, left)) for k, kind in managed.items())
    return values


def runtime_of(scope: TaskScope) -> Runtime[Any]:
    """The task's ``Runtime``, built once: most nodes never ask for it."""
    if scope.runtime is None:
        loop = scope.loop
        scope.runtime = Runtime(
            context=loop.invocation.context,
            store=store_of(scope),
            stream_writer=scope.writer or _drop,
            previous=loop.invocation.previous,
            execution_info=_execution_info(loop, scope),
            server_info=_server_info(scope.config),
            control=loop.invocation.control,
        )
        if scope.pulse is not None:  # runtime.heartbeat() refreshes the idle timeout
            scope.runtime = dataclasses.replace(scope.runtime, heartbeat=scope.pulse.beat)
    return scope.runtime


def _execution_info(loop: RunLoop, scope: TaskScope) -> ExecutionInfo:
    """LangGraph's ``runtime.execution_info``: the checkpoint is the step the task reads."""
    from wayline.graph import travel

    config = scope.config or {}
    own = f"{scope.node}:{scope.task_id}"  # as LangGraph: the task's own namespace segment
    return ExecutionInfo(
        checkpoint_id=travel.checkpoint_id(loop.tenant_id, loop.run_id, loop.step),
        checkpoint_ns="|".join((*loop.invocation.namespace, own)),
        task_id=scope.task_id,
        thread_id=loop.run_id.split("::")[0],  # a subgraph's run is on its parent's thread
        run_id=config.get("run_id"),
        node_attempt=scope.attempt,
        node_first_attempt_time=scope.first_attempt_at,
    )


def _server_info(config: Any) -> ServerInfo | None:
    """LangGraph's ``runtime.server_info``: the assistant and graph a server's run names
    in ``configurable`` (and its authenticated user), None outside a server."""
    conf = (config or {}).get("configurable") or {}
    assistant, graph = conf.get("assistant_id"), conf.get("graph_id")
    if assistant is None and graph is None:
        return None
    return ServerInfo(str(assistant or ""), str(graph or ""), conf.get("langgraph_auth_user"))


def _injected(what: str, task: ExecTask, scope: TaskScope) -> Any:
    if what == "runtime":
        return runtime_of(scope)
    if what == "config":
        return task.ctx
    if what == "writer":
        return scope.writer
    if what == "error":
        return scope.error
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


def _pulsed(write: Callable[[Any], None], pulse: Pulse) -> Callable[[Any], None]:
    def pulsed(chunk: Any) -> None:
        pulse.progress()
        write(chunk)

    return pulsed


def _drop(chunk: Any) -> None:
    """Nothing streams ``custom``."""
