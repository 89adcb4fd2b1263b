"""A LangGraph graph under ``wayline killtest`` (``LangGraphKillTarget``): what the kill
test asks of a graph (run or resume one run, a state digest, the committed history), with
LangGraph's own engine run the way a worker runs it, under a lease and fenced.

The kill test counts what really ran through ``wayline.graph.probe``. LangGraph has no
hooks of its own there, so ``ProbeCallbacks`` reports them from LangChain's callbacks: a
task's top-level run starts in the task's thread right before the node's body and ends
right after it returns, before its writes are saved (``put_writes``), which is where
wayline's own loop reports its task starts and finishes.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from wayline.errors import RunNotFoundError
from wayline.graph import probe
from wayline.graph.loop import default_owner
from wayline.langgraph.engine import LangGraphEngine, LangGraphExecution
from wayline.store.base import Store
from wayline.worker.engine import Lease

__all__ = ["LangGraphKillTarget", "ProbeCallbacks"]


class ProbeCallbacks(BaseCallbackHandler):
    """Task starts and finishes of a LangGraph run, reported to the installed probe."""

    run_inline = True  # in the task's own thread: a probe that kills stops it right there

    def __init__(self, tenant: str, run_id: str) -> None:
        self.tenant, self.run_id = tenant, run_id
        self._tasks: dict[uuid.UUID, tuple[int, str, str]] = {}
        self._open: set[str] = set()
        self._lock = threading.Lock()

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: uuid.UUID,
        metadata: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        meta = metadata or {}
        node, ns = meta.get("langgraph_node"), str(meta.get("langgraph_checkpoint_ns") or "")
        if node is None or "|" in ns:
            return  # not a task, or one of a subgraph's
        task_id = ns.rpartition(":")[2]
        with self._lock:
            if task_id in self._open:
                return  # a runnable inside the node: the task started already
            self._open.add(task_id)
            task = (int(meta.get("langgraph_step", 0)), str(node), task_id)
            self._tasks[run_id] = task
        probe.emit("task_start", self.tenant, self.run_id, *task)

    def on_chain_end(self, outputs: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        self._finish(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        with self._lock:
            task = self._tasks.pop(run_id, None)
            if task is not None:
                self._open.discard(task[2])

    def _finish(self, run_id: uuid.UUID) -> None:
        with self._lock:
            task = self._tasks.pop(run_id, None)
            if task is None:
                return
            self._open.discard(task[2])
        probe.emit("task_finish", self.tenant, self.run_id, *task)


class LangGraphKillTarget(LangGraphEngine):
    """A LangGraph graph as ``wayline killtest`` drives it."""

    max_lag_steps = None
    """LangGraph's ``async`` durability has no bound on how far its writes lag."""

    def with_store(self, store: Store) -> LangGraphKillTarget:
        bound = self.bind(store)
        assert isinstance(bound, LangGraphKillTarget)
        return bound

    def invoke(self, input: Any, config: Mapping[str, Any], durability: str = "sync") -> str:
        """Run (``input``) or resume (None) one run here, as a worker would: the run
        queued, claimed under a lease (taken from a holder that was killed), executed by
        LangGraph's engine with every write fenced. Returns the run's status."""
        assert self.store is not None
        conf = config.get("configurable") or {}
        tenant, run_id = str(conf.get("tenant", "default")), str(conf["thread_id"])
        if input is not None:
            self.store.enqueue(
                tenant,
                run_id,
                self.encode_input(input),
                graph_name=self.name,
                graph_version=self.version,
                durability=durability,
                engine=self.kind,
                fingerprint=self.fingerprint,
                shape=self.shape_json,
            )
        owner = default_owner()
        token = self.store.claim(tenant, run_id, owner=owner, lease_seconds=60, steal=True)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r}")
        stop = threading.Event()
        lease = Lease(owner=owner, lease_seconds=60, token=token, stop=stop)
        return LangGraphExecution(self, run, lease).run()

    def get_state(self, config: Mapping[str, Any]) -> Any:
        """The thread's newest state (LangGraph's ``StateSnapshot``)."""
        return self._bound.get_state(_lg_config(config))

    def state_digest(self, config: Mapping[str, Any]) -> str:
        """sha256 of the thread's newest state (values and next nodes), as LangGraph's
        serializer encodes them."""
        snap = self._bound.get_state(_lg_config(config))
        _, data = self.serde.dumps_typed([snap.values, list(snap.next)])
        return hashlib.sha256(bytes(data)).hexdigest()

    def committed(self, tenant: str, run_id: str) -> tuple[int, set[str]]:
        """(the newest checkpoint's step, the tasks of the next step whose writes it holds)."""
        assert self.store is not None
        row = self.store.lg_get_checkpoint(tenant, run_id, "", None)
        if row is None:
            return -1, set()
        writes = self.store.lg_load_writes(tenant, run_id, "", row.checkpoint_id)
        return row.step, {w.task_id for w in writes}


def _lg_config(config: Mapping[str, Any]) -> dict[str, Any]:
    conf = config.get("configurable") or {}
    return {"configurable": {"thread_id": conf["thread_id"], "tenant": conf.get("tenant")}}
