"""``stream_mode="messages"``: chat-model output from inside nodes, as LangGraph streams
it, through langchain-core's callbacks (imported only when this mode is asked for).

Each node call runs with a langchain-core callback handler in the runnable config that
chat models read from the context, so ``model.invoke(...)`` in a node streams its tokens
(or, for a model that does not stream, its whole message) as ``(message, metadata)`` with
``metadata["langgraph_node"]`` naming the node. Messages a node returns that were not
streamed already are emitted when the node finishes, as LangGraph does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, LLMResult
from langchain_core.runnables.config import var_child_runnable_config

from wayline.interop.lg_paths import LG_PATH_KINDS, PUSH, lg_path

if TYPE_CHECKING:  # the protocol is generic over the streamed item; it streams anything
    from langchain_core.tracers._streaming import _StreamingCallbackHandler

    _Streaming = _StreamingCallbackHandler[Any]
else:
    try:  # makes chat models stream inside invoke(), as LangGraph's handler does
        from langchain_core.tracers._streaming import _StreamingCallbackHandler as _Streaming
    except ImportError:  # pragma: no cover - older langchain-core
        _Streaming = object

__all__ = ["ChatStream"]

Emit = Callable[[tuple[str, ...], str, Any], None]


PROPAGATED = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)
"""The ``configurable`` keys LangGraph copies into every chunk's metadata (when given)."""

NOSTREAM = "nostream"
"""A chat model tagged so (``model.with_config(tags=["nostream"])``) is not streamed."""


class ChatStream:
    """Wraps node calls so that chat models inside them stream to ``emit``.

    ``configurable``: the caller's (``stream(..., config)``); its ``PROPAGATED`` keys go into
    each chunk's metadata, as in LangGraph. None (a worker's run): the run's thread id."""

    def __init__(self, emit: Emit, configurable: Mapping[str, Any] | None = None) -> None:
        self.emit = emit
        self.given = (
            None
            if configurable is None
            else {
                k: configurable[k]
                for k in PROPAGATED
                if isinstance(configurable.get(k), str | int | float | bool)
            }
        )
        self.seen: set[str] = set()
        self.unnamed: list[Any] = []
        """Messages streamed before they had an id: ``add_messages`` gives them theirs in
        place, and a parent node returning one of them (a subgraph's output) is not news."""
        self.meta_by_task: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {}

    def metadata(self, loop: Any, task: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
        ns = loop.invocation.namespace
        given = {"thread_id": loop.run_id} if self.given is None else self.given
        if ns:  # a subgraph's task: its graph's namespace is the configured one (LangGraph's)
            given = {**given, "checkpoint_ns": "|".join(ns)}
        meta = {
            **given,
            "ls_integration": "langgraph",
            "langgraph_step": task.step,
            "langgraph_node": task.spec.name,
            "langgraph_triggers": _triggers(task.spec.name, task.spec.path),
            "langgraph_path": lg_path(task.spec.path),
            "langgraph_checkpoint_ns": "|".join((*ns, f"{task.spec.name}:{task.id}")),
        }
        return ns, meta

    def wrap(
        self, fn: Callable[..., Any], task: Any, is_async: bool, loop: Any
    ) -> Callable[..., Any]:
        """``fn`` (the node of ``task``, run by ``loop``) with the callbacks that stream
        its chat model's tokens. The loop is passed in: this module does not import the
        graph."""
        ns, meta = self.metadata(loop, task)
        self.meta_by_task[task.id] = (ns, meta)
        handler = _Handler(self, ns, meta)
        handler.pulse = getattr(task.scope, "pulse", None)  # a token is progress (timeouts)
        # a chat model's run carries the task's namespace as checkpoint_ns too (LangGraph's)
        model_meta = {**meta, "checkpoint_ns": meta["langgraph_checkpoint_ns"]}
        config = {"callbacks": [handler], "metadata": model_meta}

        self.saw(task, loop)

        if is_async:

            @functools.wraps(fn)
            async def acall(*args: Any) -> Any:
                token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
                try:
                    return await fn(*args)
                finally:
                    var_child_runnable_config.reset(token)

            return acall

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
            try:
                return fn(*args)
            finally:
                var_child_runnable_config.reset(token)

        return call

    def saw(self, task: Any, loop: Any) -> None:
        """Messages a node is given are not news: only what it adds is streamed (as
        LangGraph marks its node's input messages seen)."""
        given = task.spec.arg if task.spec.path[0] != "pull" else loop.values()
        values = given.values() if isinstance(given, dict) else [given]
        for value in values:
            items = value if isinstance(value, list | tuple) else [value]
            for item in items:
                if isinstance(item, BaseMessage) and item.id is not None:
                    self.seen.add(item.id)

    def send(self, ns: tuple[str, ...], meta: dict[str, Any], message: Any, dedupe: bool) -> None:
        if ns and not getattr(self.emit, "subgraphs", True):
            return  # a subgraph's tokens: its node's output reaches the parent instead
        if dedupe and self.unnamed:
            named = [m for m in self.unnamed if m.id is not None]
            self.seen.update(m.id for m in named)
            self.unnamed = [m for m in self.unnamed if m.id is None]
        if dedupe and message.id is not None and message.id in self.seen:
            return
        if message.id is not None:
            self.seen.add(message.id)
        elif dedupe:
            self.unnamed.append(message)
        self.emit(ns, "messages", (message, meta))

    def node_output(self, outcome: Any) -> None:
        """Messages in a finished node's update that no model streamed."""
        found = self.meta_by_task.pop(outcome.task.id, None)
        if found is None or outcome.result is None:
            return
        ns, meta = found
        for key, value in outcome.result.writes:
            if key.startswith("__"):
                continue
            items = value if isinstance(value, list | tuple) else [value]
            for item in items:
                if isinstance(item, BaseMessage):
                    self.send(ns, meta, item, dedupe=True)


class _Handler(BaseCallbackHandler, _Streaming):
    run_inline = True

    def tap_output_iter(self, run_id: UUID, output: Any) -> Any:
        return output

    def tap_output_aiter(self, run_id: UUID, output: Any) -> Any:
        return output

    def __init__(self, stream: ChatStream, ns: tuple[str, ...], meta: dict[str, Any]) -> None:
        self.stream = stream
        self.ns = ns
        self.meta = meta
        self.streamed: set[UUID] = set()
        self.muted: set[UUID] = set()
        self.by_run: dict[UUID, dict[str, Any]] = {}
        self.pulse: Any = None

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """The model's own metadata (``ls_provider``, ``ls_model_type`` ...) and tags join
        the node's, as in LangGraph's messages stream."""
        tags = [t for t in kwargs.get("tags") or () if not t.startswith("seq:step")]
        if NOSTREAM in tags:
            self.muted.add(run_id)
            return
        meta = {**self.meta, **(metadata or {})}
        meta.update((k, v) for k, v in self.meta.items() if k.startswith("langgraph_"))
        if tags:
            meta["tags"] = tags
        self.by_run[run_id] = meta

    def on_llm_new_token(
        self, token: Any, *, chunk: Any = None, run_id: UUID, **kwargs: Any
    ) -> None:
        if self.pulse is not None:
            self.pulse.progress()
        if isinstance(chunk, ChatGenerationChunk) and run_id not in self.muted:
            self.streamed.add(run_id)
            meta = self.by_run.get(run_id, self.meta)
            self.stream.send(self.ns, meta, chunk.message, dedupe=False)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        meta = self.by_run.pop(run_id, self.meta)
        if run_id in self.muted:
            self.muted.discard(run_id)
            return
        if run_id in self.streamed:
            self.streamed.discard(run_id)
            return
        if response.generations and response.generations[0]:
            message = getattr(response.generations[0][0], "message", None)
            if isinstance(message, BaseMessage):
                self.stream.send(self.ns, meta, message, dedupe=True)


def _triggers(name: str, path: Any) -> tuple[str, ...]:
    """A task's ``langgraph_triggers``: a ``Send``'s is ``("__pregel_push",)``, a node's the
    channel its edges write (``branch:to:<node>``), as LangGraph's."""
    return (LG_PATH_KINDS[PUSH],) if path and path[0] == PUSH else (f"branch:to:{name}",)
