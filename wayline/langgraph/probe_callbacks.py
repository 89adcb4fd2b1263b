"""``ProbeCallbacks``: task starts and finishes of a LangGraph run, reported to the
installed probe (``wayline.graph.probe``) for ``wayline killtest``.

LangGraph has no hooks of its own there, so they come from LangChain's callbacks: a task's
top-level run starts in the task's thread right before the node's body and ends right after
it returns, before its writes are saved (``put_writes``), which is where wayline's own loop
reports its task starts and finishes.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from wayline.graph import probe

__all__ = ["ProbeCallbacks"]


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
