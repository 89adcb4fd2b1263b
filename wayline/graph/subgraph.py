"""Subgraphs: a compiled graph run as a node of another graph, or invoked from inside one.

A child run is a run of its own in the parent's store, with an id derived from the parent
task (``<parent run>::<node>:<task id>``): its steps are checkpointed like any run's (flat
deltas, snapshots, exact replay), and because the id is derived, a parent task that runs
again (after a crash, or on resume after an interrupt) finds its child where it stopped:

- no child run yet: start it with the parent's state (the keys the child declares);
- interrupted: resume it with the answers the parent was given for the child's questions
  (an unanswered question is asked again, from the parent);
- stopped mid-run (a crash): continue it from its last committed step;
- finished: read its result without running anything again.

The child's questions are raised from the parent task, keeping their ids, so the parent
is resumed as LangGraph's is: ``invoke(Command(resume=...), config)`` on the parent.
``Command(graph=Command.PARENT, ...)`` returned by a child's node ends the child's step
and is applied by the parent's node.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from wayline.errors import GraphError, GraphInterrupt, ParentCommand
from wayline.graph import travel
from wayline.graph.child_names import SEP, named_event
from wayline.graph.context import current_scope, scoped_index
from wayline.graph.loop import default_owner
from wayline.graph.run_config import checkpoint_config
from wayline.graph.streaming import CHECKPOINT_SRC, AtStep, checkpoint_events
from wayline.graph.types import Command, StateSnapshot
from wayline.ids import RunRef
from wayline.store.records import CommitBatch, RunUpdate

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph
    from wayline.graph.nested_stream import ChildTap

__all__ = ["CHILD_TAP", "SubgraphNode", "as_node_callable", "child_run_id", "run_child"]


CHILD_TAP: contextvars.ContextVar[ChildTap | None] = contextvars.ContextVar(
    "wayline_child_tap", default=None
)
"""Set around ``run_child`` by ``nested_stream.stream_child``: the next child run started in
this context reports to it (``_drive`` takes it, once)."""


CHILD_RECORD = "subgraph:"
"""The name under which a parent run records the id of each child run it starts."""


def child_runs(store: Any, tenant_id: str, run_id: str) -> list[str]:
    """The child runs a run started, and theirs, depth first (children before parents)."""
    found: list[str] = []
    for rec in store.list_effects(tenant_id, run_id):
        if rec.kind == "record" and rec.name.startswith(CHILD_RECORD):
            child = rec.name[len(CHILD_RECORD) :]
            found.extend(child_runs(store, tenant_id, child))
            found.append(child)
    return list(dict.fromkeys(found))  # a child met by several tasks is recorded by each


def child_run_id(parent_run: str, node: str, task_id: str, call: int = 0) -> str:
    suffix = f"{node}:{task_id}" + (f":{call}" if call else "")
    return f"{parent_run}{SEP}{suffix}"


def namespace_of(run_id: str) -> tuple[str, ...]:
    """A child run's namespace as LangGraph names it: ``("node:task_id", ...)``, a node's
    second and later subgraph calls with the call's number as a segment of its own
    (``("node:task_id", "1")``, LangGraph's ``node:task_id|1``)."""
    out: list[str] = []
    for segment in run_id.split(SEP)[1:]:
        head, _, call = segment.rpartition(":")
        if head and call.isdigit() and len(call) < 32:  # not a task id (32 hex digits)
            out.extend((head, call))
        else:
            out.append(segment)
    return tuple(out)


def as_node_callable(action: Callable[..., Any] | Mapping[str, Any]) -> Callable[..., Any]:
    """What ``add_node`` runs for an action that is not a compiled graph (the builder wraps
    one of those in a ``SubgraphNode`` itself): a Runnable's ``invoke``, a dict of them as a
    ``RunnableParallel``, a function as it is."""
    if not callable(action) and callable(getattr(action, "invoke", None)):
        return _runnable_node(action)  # a langchain-core Runnable (a chat model...)
    if isinstance(action, Mapping):
        return _parallel_node(action)
    return action


def _runnable_node(runnable: Any) -> Callable[..., Any]:
    """A Runnable that is not callable as a node: ``runnable.invoke(state, config)``, as
    LangGraph runs it (the node's chat callbacks reach it through langchain's context)."""

    def node(state: Any, config: Any) -> Any:
        return runnable.invoke(state, dict(config))

    node.__name__ = str(getattr(runnable, "name", None) or type(runnable).__name__)
    node.lc_runnable = runnable  # type: ignore[attr-defined]  # what get_graph() names
    return node


def _parallel_node(steps: Mapping[str, Any]) -> Callable[..., Any]:
    """A dict of Runnables or functions as a node, as LangGraph coerces it (langchain's
    ``RunnableParallel``): each value gets the node's input; the node returns their outputs
    under their keys."""
    for key, step in steps.items():
        if not callable(step) and not callable(getattr(step, "invoke", None)):
            raise GraphError(
                f"add_node with a dict: its value for {key!r} is a {type(step).__name__}; "
                "each value must be a function or a Runnable"
            )

    def node(state: Any, config: Any) -> Any:
        return {
            key: step.invoke(state, dict(config)) if hasattr(step, "invoke") else step(state)
            for key, step in steps.items()
        }

    node.__name__ = f"RunnableParallel<{','.join(steps)}>"
    return node


class SubgraphNode:
    """A node that runs a compiled graph on the keys it shares with its parent."""

    def __init__(self, child: CompiledGraph, parent_keys: tuple[str, ...]) -> None:
        self.child = child
        self.parent_keys = parent_keys
        self.__name__ = child.name

    def __call__(self, state: Any) -> Any:
        values = _as_dict(state)
        child_keys = self.child.input_keys
        started = {k: v for k, v in values.items() if k in child_keys}
        try:
            out = run_child(self.child, started, parent_keys=self.parent_keys)
        except ParentCommand as signal:
            command = signal.command
            return Command(update=command.update, goto=command.goto, resume=command.resume)
        return {k: v for k, v in out.items() if k in self.parent_keys}


def run_child(
    child: CompiledGraph,
    input: Any,
    *,
    parent_keys: tuple[str, ...] | None = None,
    node: str | None = None,
    context: Any = None,
) -> Any:
    """Run ``child`` as a subgraph of the task that is running, in that task's store, and
    return its output (raising its questions as the task's own)."""
    scope = current_scope()
    loop = scope.loop
    if node is None:
        node = str(getattr(scope.config, "node", "subgraph"))
    call = 0 if parent_keys is not None else scope.calls
    if parent_keys is None:
        scope.calls += 1
    persistent = child.persistent_child
    tail = node + (f":{call}" if call else "")
    if persistent:  # compile(checkpointer=True): one child thread per node, kept
        run_id = f"{loop.run_id}{SEP}{tail}"
    else:
        run_id = child_run_id(loop.run_id, node, scope.task_id, call)
    bound = as_child_of(child, loop.graph, loop.store)
    config = {**RunRef(loop.tenant_id, run_id).config(), "recursion_limit": loop.step_limit}
    if loop.subject is not None:  # the child holds the same subject's data (docs/data.md)
        config["configurable"] = {**config["configurable"], "subject": loop.subject}
    run = loop.store.get_run(loop.tenant_id, run_id)
    ledger = getattr(scope.config, "ledger", None)
    # the parent remembers its child (for purge): a new one, or a fork made for it (the
    # child as it was at the fork point, or where a subgraph checkpoint's config named it)
    remember = run is None or _fork_unrun(loop.store, loop.tenant_id, run)
    if persistent and run is None:  # a fork's first turn: the child as it was at the fork
        run = fork_persistent(bound, loop.store, loop.tenant_id, loop.run_id, tail)
    if remember and ledger is not None:
        ledger.record(f"{CHILD_RECORD}{run_id}", lambda: run_id)
    ctx = context if context is not None else loop.invocation.context
    try:
        return _call(bound, loop, scope, input, config, ctx, run_id, run, persistent, ledger)
    except ParentCommand as signal:  # leaves the function that invoked the child, and is
        signal.from_child = True  # type: ignore[attr-defined]  # applied by its task
        raise


def _fork_unrun(store: Any, tenant_id: str, run: Any) -> bool:
    """Whether ``run`` is a fork that has not run a step of its own yet."""
    if not travel.is_fork(run):
        return False
    origin = travel.load_origin(store, tenant_id, run.run_id)
    return origin is not None and origin.step == run.step


def from_child(signal: ParentCommand) -> Command[Any]:
    """A ``Command(graph=Command.PARENT)`` a child raised through the node function that
    invoked it, as the command that node's task applies; a node's own is re-raised."""
    if not getattr(signal, "from_child", False):
        raise signal
    command = signal.command
    return Command(update=command.update, goto=command.goto, resume=command.resume)


def _call(
    bound: CompiledGraph,
    loop: Any,
    scope: Any,
    input: Any,
    config: Mapping[str, Any],
    ctx: Any,
    run_id: str,
    run: Any,
    persistent: bool,
    ledger: Any,
) -> Any:
    if persistent and ledger is not None:
        # a turn this task finished is not run again when the task re-runs (a crash
        # before the parent's step committed): the ledger returns the turn's output
        return ledger.record(
            f"subgraph-turn:{run_id}",
            lambda: _turn(bound, loop, scope, input, config, ctx, run_id, run, True),
        )
    return _turn(bound, loop, scope, input, config, ctx, run_id, run, False)


def _turn(
    bound: CompiledGraph,
    loop: Any,
    scope: Any,
    input: Any,
    config: Mapping[str, Any],
    ctx: Any,
    run_id: str,
    run: Any,
    persistent: bool,
) -> Any:
    """One call of the child: start, resume or continue its run, or (a finished run of a
    child that is not persistent) read its result."""
    start: Any = input
    if run is not None:
        start = None
        if run.status == "interrupted" and bound.get_state(config).interrupts:
            start = _answers(bound, config, scope.answers)
            if start is None:  # nothing new to tell the child: ask its questions again
                raise _questions(bound.get_state(config).interrupts)
        elif run.status == "interrupted":
            start = None  # paused at a breakpoint of its own: the parent resumed, go on
        elif run.status == "done":
            if not persistent:
                return _result(bound, bound.get_state(config).values)
            start = input  # a persistent child's next turn: new input on its thread
    try:
        for _ in _drive(bound, loop, start, config, ctx, run_id):
            pass
    finally:
        ledger = getattr(scope.config, "ledger", None)
        child = loop.store.get_run(loop.tenant_id, run_id)
        if persistent and ledger is not None and child is not None:
            # where the child's thread was when this turn ended, so that a fork of the
            # parent at this step or later forks the child there (``fork_persistent``)
            ledger.record(f"{TURN_STEP}{run_id}@{child.step}", lambda: child.step)
    snapshot = bound.get_state(config)
    if snapshot.interrupts:
        raise _questions(snapshot.interrupts)
    info = snapshot.read_info
    if snapshot.next and info is not None and info.status == "interrupted":
        raise GraphInterrupt([])  # its own breakpoint: the parent pauses too, asking nothing
    return _result(bound, snapshot.values)


def _result(bound: CompiledGraph, values: Any) -> Any:
    """What the child's ``invoke`` returns for its snapshot's values: a single-value
    state's snapshot already holds the value (``StateGraph(list[str])``)."""
    return values if bound.schema.kind == "root" else bound.output_of(values)


TURN_STEP = "subgraph-step:"
"""A parent task's record of the step a persistent child's thread reached in its turn."""


def fork_persistent(
    child: CompiledGraph, store: Any, tenant_id: str, parent_run: str, tail: str
) -> Any:
    """A fork of a parent run meets its persistent child (``compile(checkpointer=True)``)
    for the first time: fork the child's thread of the run it was forked from at the step
    that thread had reached at the fork point (as LangGraph, whose replay loads the
    subgraph's checkpoint of that time). Returns the new child run, or None (no origin, or
    the child had not run by then)."""
    origin = travel.load_origin(store, tenant_id, parent_run)
    if origin is None:
        return None
    source = f"{origin.run_id}{SEP}{tail}"
    src = store.get_run(tenant_id, source)
    if src is None:
        return None
    reached = [
        step
        for run, through in _lineage(store, tenant_id, origin.run_id, origin.step)
        for step in _turn_steps(store, tenant_id, run, f"{run}{SEP}{tail}", through)
    ]
    if not reached:
        return None
    new_id, at = f"{parent_run}{SEP}{tail}", max(reached)
    token = travel.create_fork(
        store, tenant_id, source, at, new_run_id=new_id, owner=default_owner()
    )
    try:
        ref = RunRef(tenant_id, new_id)
        if not child.get_state(ref.config()).tasks:  # the turn had ended there: done
            digest = child.state_digest(ref.config())
            batch = CommitBatch(run=RunUpdate("done", at, (), state_digest=digest))
            store.commit(tenant_id, new_id, token, batch)
    finally:
        store.release(tenant_id, new_id, token)
    return store.get_run(tenant_id, new_id)


def _turn_steps(store: Any, tenant_id: str, run: str, child: str, through: int) -> list[int]:
    """The steps ``child``'s thread reached in the turns ``run``'s tasks ran through step
    ``through``."""
    prefix = f"{TURN_STEP}{child}@"
    return [
        int(rec.name[len(prefix) :])
        for rec in store.list_effects(tenant_id, run)
        if rec.kind == "record" and rec.name.startswith(prefix) and rec.step <= through
    ]


def _lineage(store: Any, tenant_id: str, run_id: str, through: int) -> list[tuple[str, int]]:
    """A run, and the runs it was forked from (whose steps before the fork it shares),
    each with the last step of it that counts."""
    runs = [(run_id, through)]
    origin = travel.load_origin(store, tenant_id, run_id)
    while origin is not None and all(origin.run_id != r for r, _ in runs):
        through = min(through, origin.step)
        runs.append((origin.run_id, through))
        origin = travel.load_origin(store, tenant_id, origin.run_id)
    return runs


def as_child_of(child: CompiledGraph, parent: CompiledGraph, store: Any) -> CompiledGraph:
    """``child`` bound to the parent's store under a graph name no worker serves
    (``parent::child``): a child run stopped by a crash is continued by its parent's task,
    never claimed by a worker as a run of its own."""
    bound = copy.copy(child.with_store(store))
    bound.name = f"{parent.name}{SEP}{child.name}"
    if bound.memory_store is None:  # as LangGraph: a subgraph uses its parent's memory
        bound.memory_store = parent.memory_store
    _CHILD_GRAPHS[bound.name] = child
    return bound


def _drive(
    child: CompiledGraph,
    parent: Any,
    start: Any,
    config: Mapping[str, Any],
    context: Any,
    run_id: str,
) -> Iterator[Any]:
    """Run the child to its end or interrupt, forwarding its stream events to the parent's
    stream under the child's namespace when the parent streams."""
    loop = child.make_loop(config, parent.durability, context=context)
    loop.invocation.namespace = namespace_of(run_id)
    at = checkpoint_config(parent.tenant_id, parent.run_id, parent.step)["configurable"]
    loop.invocation.above = {**parent.invocation.above, at["checkpoint_ns"]: at["checkpoint_id"]}
    loop.invocation.node_finished = parent.invocation.node_finished
    emit = parent.invocation.emit
    tap = CHILD_TAP.get()
    if tap is not None:  # streamed by the node (nested_stream): its caller sees the chunks
        CHILD_TAP.set(None)  # this child's only, not its own subgraphs'
        tap.attach(loop, parent)
    elif emit is not None:
        loop.invocation.emit = emit
        loop.invocation.chat_callbacks = parent.invocation.chat_callbacks
    # The child's own compiled-in breakpoints pause it; the parent's task then pauses
    # too (an interrupt with no question), and the parent's resume continues the child.
    for mode, chunk in child.run_loop(loop, start, breakpoints=child.breakpoints(None, None)):
        paused = mode == "updates" and chunk == {"__interrupt__": ()}  # its breakpoint
        if tap is not None:
            tap.own(mode, chunk)
        if (
            emit is not None
            and not paused
            and mode in ("values", "updates", "tasks", "checkpoints")
        ):
            ns = loop.invocation.namespace
            # as LangGraph's: a subgraph's tasks are at its own steps, and each step it
            # commits is a checkpoint of its namespace (``checkpoints`` and ``debug``)
            emit(ns, mode, AtStep(chunk, loop.step + 1) if mode == "tasks" else chunk)
            if mode == "values" and "__interrupt__" not in chunk and _wants_checkpoints(emit):
                states = functools.partial(task_state, child, loop.tenant_id, loop.run_id)
                for event in checkpoint_events(loop, chunk, states):
                    emit(ns, CHECKPOINT_SRC, named_event(event, loop.invocation.above))
        yield chunk


def _wants_checkpoints(emit: Any) -> bool:
    modes = getattr(emit, "modes", None)
    return not isinstance(modes, set) or bool(modes & {"checkpoints", "debug"})


def _answers(child: CompiledGraph, config: Mapping[str, Any], answers: Mapping[str, Any]) -> Any:
    pending = [i.id for i in child.get_state(config).interrupts]
    given = {iid: answers[iid] for iid in pending if iid in answers}
    if not given:
        return None
    return Command(resume=given)


def _questions(interrupts: Any) -> GraphInterrupt:
    found = list(interrupts)
    # Each question keeps a record of its own in the parent: an index from its id.
    return GraphInterrupt(found, indexes=[scoped_index(i.id) for i in found])


def _as_dict(state: Any) -> dict[str, Any]:
    if isinstance(state, Mapping):
        return dict(state)
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    fields = getattr(type(state), "model_fields", None)
    if isinstance(fields, dict):
        return {k: getattr(state, k) for k in fields}
    return {}


_CHILD_GRAPHS: dict[str, CompiledGraph] = {}
"""The compiled graph of each child graph name (``parent::child``) this process ran: a
subgraph invoked inside a node function is known to its parent only by its runs' name."""


def with_child_states(graph: CompiledGraph, snapshot: StateSnapshot) -> StateSnapshot:
    """``get_state(subgraphs=True)``: each task that runs a subgraph (as a node, or invoked
    inside the node's function) gets the state of its child run (recursively)."""
    conf = snapshot.config["configurable"]
    tenant = conf.get("tenant", "default")
    tasks = []
    for task in snapshot.tasks:
        found = _child_of_task(graph, tenant, conf["thread_id"], task.name, task.id)
        if found is not None:
            child, run_id = found
            cfg = {"configurable": {"thread_id": run_id, "tenant": tenant}}
            task = dataclasses.replace(task, state=child.get_state(cfg, subgraphs=True))
        tasks.append(task)
    return dataclasses.replace(snapshot, tasks=tuple(tasks))


def with_child_configs(graph: CompiledGraph, snapshot: StateSnapshot) -> StateSnapshot:
    """``get_state(subgraphs=False)``: each task of a subgraph node gets, as its ``state``,
    the config that names its child run as LangGraph's does (``task_state``)."""
    conf = snapshot.config["configurable"]
    tenant, thread = str(conf.get("tenant", "default")), str(conf["thread_id"])
    tasks = [
        t
        if t.state is not None
        else dataclasses.replace(t, state=named)
        if (named := task_state(graph, tenant, thread, t.name, t.id)) is not None
        else t
        for t in snapshot.tasks
    ]
    return dataclasses.replace(snapshot, tasks=tuple(tasks))


def task_state(
    graph: CompiledGraph, tenant: str, run_id: str, node: str, task_id: str
) -> dict[str, Any] | None:
    """The ``state`` LangGraph shows for a task (in ``get_state`` without subgraphs, and in
    the ``checkpoints`` and ``debug`` streams): for a task of a subgraph node, the config
    naming the child run it runs (or will run), with the root's ``thread_id`` and the
    child's ``checkpoint_ns``, which the root's ``get_state``, ``get_state_history`` and
    ``update_state`` read and edit; None for any other task."""
    fn = getattr(graph.nodes.get(node), "fn", None)
    if not isinstance(fn, SubgraphNode):
        return None
    child = f"{run_id}{SEP}{node}" if fn.child.persistent_child else None
    conf = {
        "thread_id": run_id.split(SEP)[0],
        "checkpoint_ns": _namespace(child or child_run_id(run_id, node, task_id)),
    }
    return {"configurable": conf if tenant == "default" else {**conf, "tenant": tenant}}


def _namespace(run_id: str) -> str:
    return "|".join(run_id.split(SEP)[1:])


def _child_of_task(
    graph: CompiledGraph, tenant: str, thread: str, node: str, task_id: str
) -> tuple[CompiledGraph, str] | None:
    """The child graph (bound to ``graph``'s store) and run a task of ``node`` started."""
    fn = graph.nodes[node].fn if node in graph.nodes else None
    for run_id in (child_run_id(thread, node, task_id), f"{thread}{SEP}{node}"):
        run = graph.store.get_run(tenant, run_id)
        if run is None:
            continue
        child = fn.child if isinstance(fn, SubgraphNode) else _CHILD_GRAPHS.get(run.graph_name)
        if child is not None:
            return child.with_store(graph.store), run_id
    return None
