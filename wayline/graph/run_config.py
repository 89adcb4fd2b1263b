"""A call's config, read once at the edge: the run it names (tenant, thread id), a step's
address as LangGraph's checkpoint ids spell it, and whether a call comes from inside a
running node (then it is that node's subgraph)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wayline.errors import ConfigError, WaylineError
from wayline.graph import travel
from wayline.graph.context import current_scope

if TYPE_CHECKING:
    from wayline.graph.loop import RunLoop

__all__ = [
    "DEFAULT_TENANT",
    "at_step",
    "checked_config",
    "checkpoint_config",
    "inside_task",
    "node_config",
    "own_thread",
    "run_ids",
    "same_run",
]

DEFAULT_TENANT = "default"


def same_run(config: Mapping[str, Any] | None, loop: RunLoop) -> dict[str, Any]:
    """``config`` naming the run ``loop`` ran (a started run's id may have been made)."""
    out = dict(config or {})
    out["configurable"] = {
        **dict(out.get("configurable") or {}),
        **loop.ref.config()["configurable"],
    }
    return out


def node_config(loop: RunLoop, node: str, task_id: str) -> dict[str, Any]:
    """The config a task's node sees, as LangGraph's: the run's, with the thread a
    subgraph's run is on (its root's: ``thread_id``) and the task's namespace
    (``checkpoint_ns``, ``"node:task_id"`` under its parents')."""
    conf = dict(loop.config.get("configurable") or {})
    conf["thread_id"] = root_thread(loop.run_id)
    conf["checkpoint_ns"] = "|".join((*loop.invocation.namespace, f"{node}:{task_id}"))
    return {**loop.config, "configurable": conf}


def root_thread(run_id: str) -> str:
    """The thread a run is on: a subgraph's run (``<parent>::<ns>``) is on its root's."""
    return run_id.split("::")[0]


def own_thread(thread: Any, loop: RunLoop) -> bool:
    """Whether ``thread`` (a config's) is the running run's: its id, or the thread a
    node's config names (its root's)."""
    return str(thread) in (loop.run_id, root_thread(loop.run_id))


def at_step(tenant: str, run_id: str, step: int) -> dict[str, Any]:
    """A step's address in a config, as LangGraph's: ``checkpoint_ns`` (a subgraph's run,
    ``<parent>::<node>:<task id>``, names its namespace, ``"node:task_id|..."``; a root's
    is "") and ``checkpoint_id``, which encodes the step (``travel.requested_step`` reads
    it back)."""
    cid = travel.checkpoint_id(tenant, run_id, step)
    return {"checkpoint_ns": run_namespace(run_id), "checkpoint_id": cid}


def run_namespace(run_id: str) -> str:
    """The ``checkpoint_ns`` of a run: its segments under its root, ``|``-joined."""
    return "|".join(run_id.split("::")[1:])


def checkpoint_config(tenant: str, run_id: str, step: int, **extra: Any) -> dict[str, Any]:
    """The config of a run's step as LangGraph returns one (``get_state``, history,
    ``update_state``, the ``checkpoints`` stream): ``{"configurable": {"thread_id",
    "checkpoint_ns", "checkpoint_id"}}``, with ``tenant`` only for a tenant not the
    default, and ``extra`` configurable keys before the address."""
    conf: dict[str, Any] = {"thread_id": run_id}
    if tenant != DEFAULT_TENANT:
        conf["tenant"] = tenant
    return {"configurable": {**conf, **extra, **at_step(tenant, run_id, step)}}


def checked_config(config: Any) -> Mapping[str, Any]:
    """A LangGraph-style config as given (None: empty), or ``ConfigError`` saying what is
    wrong with it, before anything is read or written."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigError(
            "config must be a dict like {'configurable': {'thread_id': 'my-thread'}}, "
            f"not {type(config).__name__}"
        )
    configurable = config.get("configurable")
    if configurable is not None and not isinstance(configurable, Mapping):
        raise ConfigError(
            "config['configurable'] must be a dict like {'thread_id': 'my-thread'}, "
            f"not {type(configurable).__name__}"
        )
    limit = config.get("recursion_limit")  # a number, as LangGraph reads it (1e4 too)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float)):
        raise ConfigError(f"config['recursion_limit'] must be a number, not {limit!r}")
    return config


def inside_task(config: Mapping[str, Any] | None) -> bool:
    """Whether ``invoke`` was called from inside a running node without a thread of its
    own: then the graph runs as that node's subgraph."""
    thread = (checked_config(config).get("configurable") or {}).get("thread_id")
    try:
        loop = current_scope().loop
    except WaylineError:
        return False
    # the node's own config passed on (as LangGraph's examples do) names the node's thread
    return loop is not None and (not thread or own_thread(thread, loop))


def run_ids(config: Mapping[str, Any] | None, *, create: bool) -> tuple[str, str]:
    """(tenant, run id) from a LangGraph-style config. A missing thread id is an error (as
    in LangGraph) unless ``create``: a run of a graph without a checkpointer of its own.
    Any value but None and "" is an id: thread 0 is the run "0"."""
    conf = checked_config(config).get("configurable", {}) or {}
    tenant = str(conf.get("tenant", DEFAULT_TENANT))
    run_id = conf.get("thread_id", conf.get("run_id"))
    if run_id is None or run_id == "":
        if run_id == "" or not create:
            raise ConfigError(
                f"config needs {{'configurable': {{'thread_id': ...}}}} to find or start a run "
                f"(got {run_id!r}): a thread id names the run, so each invoke would otherwise "
                "start a new one"
            )
        run_id = uuid.uuid4().hex
    return tenant, str(run_id)
