"""A LangGraph graph under ``wayline killtest`` (``LangGraphKillTarget``): what the kill
test asks of a graph (run or resume one run, a state digest, the committed history), with
LangGraph's own engine run the way a worker runs it, under a lease and fenced.

The kill test counts what really ran through ``wayline.graph.probe``, which the engine
reports from LangChain's callbacks (``wayline.langgraph.probe_callbacks``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any

from wayline.errors import RunNotFoundError
from wayline.graph.loop import default_owner
from wayline.langgraph.engine import LangGraphEngine, LangGraphExecution
from wayline.store.base import Store
from wayline.worker.engine import Lease

__all__ = ["LangGraphKillTarget"]


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
