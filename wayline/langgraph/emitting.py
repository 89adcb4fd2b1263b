"""What a LangGraph run's nodes emit on a worker (``get_stream_writer()`` chunks: stream
mode ``custom``; chat-model tokens: ``messages``), recorded for the server's streams as a
wayline run's are (``wayline.worker.emitted``): the same ``EmitSink``, the same
``stream_events`` rows, fenced by the run's lease token, read back by the server's watch
of the thread (``wayline.langgraph.served.LangGraphWatch``).

LangGraph's own loop produces them: the execution asks ``astream`` for the modes the run's
queued input asked for, and hands each chunk to the sink with its step and node. A
``messages`` chunk carries both in its metadata (``langgraph_step``, ``langgraph_node``);
a ``custom`` chunk carries neither, so ``custom`` also asks for ``debug``, whose ``task``
events name each step's tasks before they run (a chunk belongs to the step whose tasks
were announced last). When the run's stream asked for ``stream_subgraphs``, what
subgraphs emit is recorded too (``astream(subgraphs=True)``), in the root step and node
that ran the subgraph, under the name LangGraph's server gives its events
(``custom|node:task id``, ``messages|...``). Events are appended as each task's update
arrives (before the checkpoint of its step, or shortly after: a stream reading both still
sends them), chat tokens at most ``FLUSH_SECONDS`` apart, and what is left when the
execution ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wayline.codec import default_codec
from wayline.store.base import Store
from wayline.store.records import RunRecord
from wayline.worker.emitted import ATTEMPT, EMITTED_MODES, EmitSink

__all__ = ["LangGraphEmitter", "emitter_for"]


class LangGraphEmitter:
    """The modes a run's ``astream`` is asked for, and where its chunks go."""

    def __init__(self, sink: EmitSink, first_step: int) -> None:
        self.sink = sink
        self.step = first_step
        self.tasks: list[str] = []
        """The names of the tasks of ``step`` (a ``custom`` chunk's node when one)."""

    @property
    def modes(self) -> list[str]:
        out = []
        if "custom" in self.sink.modes:
            out += ["custom", "debug"]
        if "messages" in self.sink.modes:
            out.append("messages")
        return out

    def chunk(self, mode: str, data: Any, ns: tuple[str, ...] = ()) -> None:
        """One chunk of ``astream`` (any mode but ``updates``), of the subgraph ``ns``."""
        if ns:
            self._nested(mode, data, ns)
        elif mode == "debug":
            if data.get("type") == "task":
                step = int(data.get("step", self.step))
                if step != self.step:
                    self.step, self.tasks = step, []
                self.tasks.append(str((data.get("payload") or {}).get("name", "")))
            elif data.get("type") == "checkpoint":
                self.sink.flush()
        elif mode == "custom":
            node = self.tasks[0] if len(self.tasks) == 1 else ""
            self.sink.add(self.step, node, "custom", data)
        elif mode == "messages":
            message, meta = data
            meta = _node_meta(meta)
            step = int(meta.get("langgraph_step", self.step))
            self.sink.add(step, str(meta.get("langgraph_node", "")), "messages", (message, meta))

    def _nested(self, mode: str, data: Any, ns: tuple[str, ...]) -> None:
        """A subgraph's chunk: in the root step running it, by the root node hosting it."""
        node = ns[0].split(":")[0]
        if mode == "custom":
            self.sink.add(self.step, node, "|".join(("custom", *ns)), data)
        elif mode == "messages":
            message, meta = data
            self.sink.add(self.step, node, "|".join(("messages", *ns)), (message, _node_meta(meta)))

    def updated(self) -> None:
        """A task's update arrived: what its step emitted so far is appended."""
        self.sink.flush()

    def close(self) -> None:
        self.sink.close()


def _node_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A chat chunk's metadata as LangGraph gives it, less wayline's own keys (the worker
    and fencing token a checkpoint's metadata names, the run's tenant)."""
    return {
        k: v
        for k, v in meta.items()
        if not k.startswith(("wayline_", "__")) and k != "tenant" and _plain(v)
    }


def _plain(value: Any) -> bool:
    if isinstance(value, str | int | float | bool) or value is None:
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return False


def emitter_for(
    store: Store, run: RunRecord, token: int, options: Mapping[str, Any]
) -> LangGraphEmitter | None:
    """The emitter of a claimed LangGraph run whose queued input asked for node-emitted
    modes (``options``: the options queued with it); a run taken over after its input was
    consumed records what its first claim asked (its attempt mark). None: none asked."""
    if run.inbox is not None:
        modes = frozenset(str(m) for m in options.get("stream_modes") or ())
    else:
        mark = store.last_stream_event(run.tenant_id, run.run_id, ATTEMPT)
        modes = frozenset() if mark is None else frozenset(default_codec.loads(mark.payload))
    if not modes & EMITTED_MODES:
        return None
    sink = EmitSink(store, default_codec, run.tenant_id, run.run_id, token, modes)
    sink.mark(run.step + 1)  # what follows is this attempt's
    return LangGraphEmitter(sink, run.step + 1)
