"""Stream modes ``debug`` and ``events`` of runs on workers, in the shapes ``langgraph dev``
sends them, built from what the store holds: each committed step (its tasks' writes, the
state before and after) and the chat-model tokens recorded while a node ran.

``debug``: a ``checkpoint`` event per committed step (the first, step -1, before the
input), and per task a ``task`` and a ``task_result`` event. A step's ``task`` events are
sent when the step commits (the server learns of a task from its committed writes), just
before its results, so the order is LangGraph's.

``events`` (``astream_events`` v2): ``on_chain_start``/``on_chain_end`` for the graph and
each node, ``on_chain_stream`` with a node's writes, and ``on_chat_model_start`` /
``on_chat_model_stream`` / ``on_chat_model_end`` around the tokens a node's chat model
streamed (sent as they arrive, before the node's step commits). Runnables inside a node
other than chat models (tools, retrievers, prompts) send nothing: the worker records only
tokens.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from wayline.graph.types import START
from wayline.server.views import checkpoint_id

__all__ = ["StepEvents"]

Event = tuple[str, Any]
_NS = uuid.UUID("2f0c1a3e-6d9b-4a51-8e0f-6a1b7c9d2e44")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class StepEvents:
    def __init__(
        self, modes: list[str], run_id: str, thread_id: str, run_meta: dict[str, Any]
    ) -> None:
        self.debug = "debug" in modes
        self.events = "events" in modes
        self.run_id = run_id
        self.thread_id = thread_id
        self.run_meta = {**run_meta, "run_attempt": 1}
        self.graph_id = str(run_meta.get("graph_id", ""))
        self.pending: tuple[int, Any] | None = None
        """The last committed step's checkpoint, sent once the next step's tasks are known."""
        self.started = False
        self.last_values: Any = None
        self.nodes: dict[tuple[int, str], str] = {}
        """(step, node) of nodes whose start was sent: their event run id."""
        self.models: dict[str, Any] = {}
        """Chat-model message id -> the message so far, of nodes not yet committed."""

    # -- ids --------------------------------------------------------------------------

    def _task_id(self, step: int, node: str, path: Any) -> str:
        return str(uuid.uuid5(_NS, f"{self.thread_id}|{step}|{node}|{path}"))

    def _checkpoint(self, step: int) -> dict[str, Any]:
        return {
            "checkpoint_id": checkpoint_id(self.thread_id, step),
            "thread_id": self.thread_id,
            "checkpoint_ns": "",
        }

    def _config(self, step: int) -> dict[str, Any]:
        return {
            "configurable": {
                "checkpoint_ns": "",
                "run_id": self.run_id,
                "thread_id": self.thread_id,
                "graph_id": self.graph_id,
                "assistant_id": self.run_meta.get("assistant_id"),
                "checkpoint_id": checkpoint_id(self.thread_id, step),
            }
        }

    # -- debug ------------------------------------------------------------------------

    def _checkpoint_event(self, step: int, values: Any, next_: list[str]) -> Event:
        parent = None if step < 0 else self._checkpoint(step - 1)
        payload = {
            "config": self._config(step),
            "parent_config": None if step < 0 else self._config(step - 1),
            "values": values,
            "metadata": {"source": "input" if step < 0 else "loop", "step": step, "parents": {}},
            "next": next_,
            "tasks": [
                {"id": self._task_id(step + 1, n, n), "name": n, "interrupts": [], "state": None}
                for n in next_
            ],
            "checkpoint": self._checkpoint(step),
            "parent_checkpoint": parent,
        }
        return (
            "debug",
            {"step": step, "timestamp": _now(), "type": "checkpoint", "payload": payload},
        )

    def _flush_checkpoint(self, next_: list[str]) -> list[Event]:
        if self.pending is None:
            return []
        step, values = self.pending
        self.pending = None
        return [self._checkpoint_event(step, values, next_)]

    # -- events -----------------------------------------------------------------------

    def _event(
        self, kind: str, name: str, data: Any, run_id: str, meta: dict[str, Any], **extra: Any
    ) -> Event:
        body = {
            "event": kind,
            "data": data,
            "name": name,
            "tags": extra.get("tags", []),
            "run_id": run_id,
            "metadata": meta,
            "parent_ids": extra.get("parents", [self.run_id]),
        }
        return ("events", body)

    def _start_graph(self, given: Any) -> list[Event]:
        if self.started or not self.events:
            return []
        self.started = True
        return [
            self._event(
                "on_chain_start",
                self.graph_id,
                {"input": given},
                self.run_id,
                self.run_meta,
                parents=[],
            )
        ]

    def _node_meta(self, step: int, node: str, path: Any, task_id: str) -> dict[str, Any]:
        return {
            **self.run_meta,
            "langgraph_step": step,
            "langgraph_node": node,
            "langgraph_triggers": [f"branch:to:{node}"],
            "langgraph_path": list(path) if isinstance(path, list | tuple) else [path],
            "langgraph_checkpoint_ns": f"{node}:{task_id}",
        }

    def _start_node(self, step: int, node: str, data: Any, meta: dict[str, Any]) -> list[Event]:
        key = (step, node)
        if key in self.nodes:
            return []
        ns = str(meta.get("langgraph_checkpoint_ns", ""))
        task_id = ns.rpartition(":")[2] or self._task_id(step, node, node)
        self.nodes[key] = task_id
        tags = [f"graph:step:{step}"]
        return [self._event("on_chain_start", node, {"input": data}, task_id, meta, tags=tags)]

    def message(self, message: Any, meta: dict[str, Any]) -> list[Event]:
        """A token a node's chat model streamed (``events``: start events first)."""
        if not self.events:
            return []
        meta = {**self.run_meta, **meta}
        step, node = int(meta.get("langgraph_step", 0)), str(meta.get("langgraph_node", ""))
        out = self._start_graph(None)
        out += self._start_node(step, node, None, meta)
        parents = [self.run_id, self.nodes[(step, node)]]
        key = str(message.id)
        model_run = str(uuid.uuid5(_NS, f"{self.thread_id}|{key}"))
        name = str(meta.get("ls_provider") or "chat_model")
        if key not in self.models:
            self.models[key] = (message, meta, parents, model_run, name)
            out.append(
                self._event(
                    "on_chat_model_start", name, {"input": None}, model_run, meta, parents=parents
                )
            )
        else:
            so_far = self.models[key][0]
            self.models[key] = (so_far + message, meta, parents, model_run, name)
        out.append(
            self._event(
                "on_chat_model_stream", name, {"chunk": message}, model_run, meta, parents=parents
            )
        )
        return out

    # -- steps ------------------------------------------------------------------------

    def step(self, data: Any) -> list[Event]:
        step, done, before, after = data
        out: list[Event] = []
        names = [n for n, _, _ in done if n != START and not n.startswith("__")]
        if self.debug:
            if any(n == START for n, _, _ in done):
                out.append(self._checkpoint_event(step - 1, before, [START]))
            else:
                out += self._flush_checkpoint(names)
        started = [n for n, _, _ in done if n == START]
        if started:
            out += self._start_graph(next(w for n, _, w in done if n == START))
        for node, path, writes in done:
            if node == START or node.startswith("__"):
                continue
            task_id = self.nodes.get((step, node)) or self._task_id(step, node, path)
            meta = self._node_meta(step, node, path, task_id)
            if self.debug:
                task = {
                    "id": task_id,
                    "name": node,
                    "input": before,
                    "triggers": [f"branch:to:{node}"],
                    "metadata": self.run_meta,
                }
                result = {
                    "id": task_id,
                    "name": node,
                    "error": None,
                    "result": writes,
                    "interrupts": [],
                }
                out.append(
                    ("debug", {"step": step, "timestamp": _now(), "type": "task", "payload": task})
                )
                out.append(
                    (
                        "debug",
                        {
                            "step": step,
                            "timestamp": _now(),
                            "type": "task_result",
                            "payload": result,
                        },
                    )
                )
            if self.events:
                out += self._start_graph(None)
                out += self._start_node(step, node, before, meta)
                out += self._end_models(step, node)
                tags = [f"graph:step:{step}"]
                out.append(
                    self._event(
                        "on_chain_stream", node, {"chunk": writes}, task_id, meta, tags=tags
                    )
                )
                out.append(
                    self._event(
                        "on_chain_end",
                        node,
                        {"input": before, "output": writes},
                        task_id,
                        meta,
                        tags=tags,
                    )
                )
        self.pending = (step, after)
        self.last_values = after
        return out

    def _end_models(self, step: int, node: str) -> list[Event]:
        out = []
        for key, (message, meta, parents, model_run, name) in list(self.models.items()):
            if meta.get("langgraph_step") == step and meta.get("langgraph_node") == node:
                del self.models[key]
                out.append(
                    self._event(
                        "on_chat_model_end",
                        name,
                        {"output": message},
                        model_run,
                        meta,
                        parents=parents,
                    )
                )
        return out

    def finish(self) -> list[Event]:
        """The stream's last events: the last checkpoint, the graph's end."""
        out = self._flush_checkpoint([]) if self.debug else []
        if self.events and self.started:
            out.append(
                self._event(
                    "on_chain_end",
                    self.graph_id,
                    {"output": self.last_values},
                    self.run_id,
                    self.run_meta,
                    parents=[],
                )
            )
        return out
