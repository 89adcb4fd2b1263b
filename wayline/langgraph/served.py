"""A LangGraph graph served by ``wayline serve`` (``LangGraphServed``): the engine a worker
runs it on, and what the server reads of its threads, in the shapes the server gives
wayline's own graphs.

The server addresses a thread's states by step (``wayline.server.views``: a checkpoint id
carries its step). A LangGraph thread's step ``s`` is its newest root checkpoint whose
metadata says step ``s``; its state is LangGraph's own (``get_state`` on the checkpoint,
through ``WaylineSaver``), with each interrupt's approvers and digest from wayline's
records. Streams follow the thread's committed checkpoints (``LangGraphWatch``): ``values``
is the state at each new step, ``updates`` the results of the tasks that made it, ``debug``
and ``events`` are built from both (``wayline.server.run_events``), and what nodes emitted
(``custom`` chunks, chat-model tokens for ``messages``/``messages-tuple``/``events``) is read
from the rows the worker recorded (``wayline.langgraph.emitting``), each step's ahead of
that step's updates.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, cast

from wayline.codec import default_codec
from wayline.errors import ConfigError, RunNotFoundError
from wayline.graph.types import Interrupt, PregelTask, StateSnapshot
from wayline.langgraph.engine import LangGraphEngine
from wayline.server.stream import STEP, RunWatch
from wayline.store.base import Store
from wayline.store.records import CommitBatch, RunUpdate

__all__ = ["LangGraphServed", "LangGraphWatch"]


class LangGraphServed(LangGraphEngine):
    """A LangGraph graph as the server sees an assistant's graph."""

    codec = default_codec
    """What the server encodes a thread's input with (JSON from HTTP: plain values, which
    LangGraph's serializer reads back as they are)."""

    @property
    def schema(self) -> Any:
        cls = getattr(getattr(self.graph, "builder", None), "state_schema", None) or dict
        channels = [c for c in self.graph.channels if not c.startswith("__")]
        return types.SimpleNamespace(cls=cls, classes={}, channels=channels)

    def with_store(self, store: Store) -> LangGraphServed:
        bound = self.bind(store)
        assert isinstance(bound, LangGraphServed)
        return bound

    # -- reading a thread -----------------------------------------------------------------

    def _checkpoint_at(self, tenant: str, thread: str, step: int | None) -> str | None:
        """The id of the thread's newest root checkpoint of ``step`` (None: the newest)."""
        assert self.store is not None
        newest = self.store.lg_get_checkpoint(tenant, thread, "", None)  # one indexed row
        if newest is None or step is None or newest.step == step:
            return None if newest is None else newest.checkpoint_id
        rows = self.store.lg_list_checkpoints(
            tenant, thread_id=thread, checkpoint_ns="", before_id=None, limit=None
        )
        for _, row in rows:
            if step is None or row.step == step:
                return row.checkpoint_id
        return None

    def get_state(self, config: Mapping[str, Any]) -> StateSnapshot:
        """The state at the thread's step ``configurable.step`` (default: its newest)."""
        conf = dict(config.get("configurable") or {})
        tenant, thread = str(conf.get("tenant", "default")), str(conf["thread_id"])
        step = conf.get("step")
        found = self._checkpoint_at(tenant, thread, None if step is None else int(step))
        if found is None:
            raise RunNotFoundError(f"thread {thread!r} has no checkpoint at step {step}")
        return self._snapshot(tenant, thread, found)

    def _snapshot(self, tenant: str, thread: str, checkpoint_id: str) -> StateSnapshot:
        lg_conf = {"thread_id": thread, "tenant": tenant, "checkpoint_id": checkpoint_id}
        snap = self._bound.get_state({"configurable": lg_conf})
        assert self.store is not None
        step = int((snap.metadata or {}).get("step", -1))
        governed = {i.interrupt_id: i for i in self.store.load_interrupts(tenant, thread, step + 1)}

        def interrupt(lg: Any) -> Interrupt:
            rec = governed.get(lg.id)
            if rec is None:
                return Interrupt(lg.value, lg.id)
            return Interrupt(lg.value, lg.id, rec.approvers, rec.expires_at, rec.digest)

        tasks = tuple(
            PregelTask(
                t.id,
                t.name,
                tuple(t.path),
                interrupts=tuple(interrupt(i) for i in t.interrupts),
                result=t.result,
            )
            for t in snap.tasks
        )
        values = snap.values if isinstance(snap.values, dict) else {"__root__": snap.values}
        return StateSnapshot(
            values=dict(values),
            next=tuple(snap.next),
            config={"configurable": {"thread_id": thread, "tenant": tenant, "step": step}},
            metadata={**_shown(snap.metadata), "step": step},
            created_at=snap.created_at,
            parent_config=None,
            tasks=tasks,
            interrupts=tuple(i for t in tasks for i in t.interrupts),
        )

    def update_state(
        self, config: Mapping[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """LangGraph's ``update_state`` on a settled thread, under a lease of its own (the
        write is fenced like a worker's); the run row moves to the new step."""
        from wayline.langgraph.fence import FENCE_KEY, RunFence

        assert self.store is not None
        conf = dict(config.get("configurable") or {})
        tenant, thread = str(conf.get("tenant", "default")), str(conf["thread_id"])
        run = self.store.get_run(tenant, thread)
        if run is None:
            raise RunNotFoundError(f"no thread {thread!r} for tenant {tenant!r}")
        token = self.store.claim(tenant, thread, owner="server:update_state", lease_seconds=30)
        try:
            fence = RunFence(token, "server:update_state", take_inbox=False)
            lg_conf = {"thread_id": thread, "tenant": tenant, FENCE_KEY: fence}
            out = self._bound.update_state({"configurable": lg_conf}, values, as_node=as_node)
            cid = out["configurable"]["checkpoint_id"]
            step = self._snapshot(tenant, thread, cid).metadata["step"]
            batch = CommitBatch(run=RunUpdate(run.status, step, run.next_nodes))
            self.store.commit(tenant, thread, token, batch)
        finally:
            self.store.release(tenant, thread, token)
        return {"configurable": {"thread_id": thread, "tenant": tenant, "step": step}}

    def graph_json(self) -> dict[str, Any]:
        """Nodes and edges in the shape of LangGraph's ``/assistants/{id}/graph``."""
        drawn = self.graph.get_graph()
        nodes = [{"id": n, "type": "runnable", "data": {"name": n}} for n in drawn.nodes]
        edges: list[dict[str, Any]] = []
        for e in drawn.edges:
            edge: dict[str, Any] = {"source": e.source, "target": e.target}
            if e.conditional:
                edge["conditional"] = True
            edges.append(edge)
        return {"nodes": nodes, "edges": edges}

    def watch(self, store: Store, tenant: str, thread_id: str, start_step: int, **kw: Any) -> Any:
        """The stream of a run on the thread (``wayline.server.stream.RunWatch``'s shape)."""
        return LangGraphWatch(store, cast(Any, self), tenant, thread_id, start_step, **kw)


class LangGraphWatch(RunWatch):
    """``RunWatch`` over a LangGraph thread's checkpoints instead of wayline's deltas."""

    graph: Any
    light = False  # each read rebuilds the steps' snapshots: kept off the event loop

    def poll(self) -> list[tuple[str, Any]]:
        run = self.run_now()
        if run is None:
            self.done = True
            return [("error", {"error": "RunNotFoundError", "message": "the thread was deleted"})]
        served: LangGraphServed = self.graph
        events: list[tuple[str, Any]] = []
        if self.channels is None:
            self.channels = {}
            if self.step >= 0:
                self.channels = self._values(self.step)
            if self.show_start:
                events.append(("values", dict(self.channels)))
        top = run.step if self.end_step is None else min(run.step, self.end_step)
        if top > self.step:
            emitted = self._emitted(top)
            by_step = self._checkpoints(self.step - 1, top)
            for step in range(self.step + 1, top + 1):
                if step not in by_step:
                    continue
                while emitted and emitted[0][0] <= step:  # emitted while it ran
                    events.append(emitted.pop(0)[1])
                before = by_step.get(step - 1)
                done: list[tuple[str, Any, Any]] = []
                if before is not None:
                    for task in served._snapshot(self.tenant, self.thread_id, before).tasks:
                        if task.result is None:
                            continue
                        done.append((task.name, tuple(task.path), task.result))
                        if not task.name.startswith("__"):
                            events.append(("updates", {task.name: task.result}))
                previous = dict(self.channels)
                snap = served._snapshot(self.tenant, self.thread_id, by_step[step])
                self.channels = dict(snap.values)
                if snap.metadata.get("source") != "input":  # input not applied yet: as
                    events.append(("values", dict(self.channels)))  # LangGraph, no event
                    if self.steps:  # debug, events: the step whole
                        events.append((STEP, (step, done, previous, dict(self.channels))))
                self.step = step
            events.extend(event for _, event in emitted)  # none left, bar a gap in steps
        if self.end_step is not None and self.step >= self.end_step:
            self.done = True
        elif _settled(run) and self.step >= run.step:
            self.done = True
            # a step that committed no checkpoint (it paused on an interrupt) may have emitted
            events.extend(event for _, event in self._emitted(run.step + 1))
            events.extend(self._ending(run.status, run.error, run.step))
        elif self.step >= run.step:  # the step running now: what it emitted so far
            events.extend(event for _, event in self._emitted(run.step + 1))
        return events

    def _values(self, step: int) -> dict[str, Any]:
        found = self.graph._checkpoint_at(self.tenant, self.thread_id, step)
        if found is None:
            return {}
        return dict(self.graph._snapshot(self.tenant, self.thread_id, found).values)

    def _checkpoints(self, after: int, top: int) -> dict[int, str]:
        """The newest root checkpoint of each step in (``after``, ``top``]: the newest rows
        only (about one a step), all of them only when a thread forked or was updated."""
        limit = 2 * (top - after) + 4
        rows = self.store.lg_list_checkpoints(
            self.tenant, thread_id=self.thread_id, checkpoint_ns="", before_id=None, limit=limit
        )
        if len(rows) == limit and rows[-1][1].step > after:
            rows = self.store.lg_list_checkpoints(
                self.tenant, thread_id=self.thread_id, checkpoint_ns="", before_id=None, limit=None
            )
        out: dict[int, str] = {}
        for _, row in rows:  # newest first
            if row.step <= after:
                break
            if row.step <= top:
                out.setdefault(row.step, row.checkpoint_id)
        return out


def _shown(metadata: Any) -> dict[str, Any]:
    """A checkpoint's metadata as the API shows it: without what wayline keeps there for
    a takeover (the invocation's queued options)."""
    from wayline.langgraph.fence import QUEUED_KEY

    return {k: v for k, v in (metadata or {}).items() if k != QUEUED_KEY}


def _settled(run: Any) -> bool:
    from wayline.server.views import settled

    return settled(run)


def served(graph: Any, store: Store, **kw: Any) -> LangGraphServed:
    """A LangGraph graph (or a ``LangGraphEngine``) for ``wayline serve``."""
    if isinstance(graph, LangGraphEngine):
        return LangGraphServed(
            graph.graph,
            name=graph.name,
            version=graph.version,
            store=store,
            approvers=graph.approvers,
            memory=graph.memory,
        )
    if not hasattr(graph, "stream"):
        raise ConfigError(f"a {type(graph).__name__} is not a compiled LangGraph graph")
    return LangGraphServed(graph, store=store, **kw)
