"""Chat-model tokens as a LangGraph server sends them: stream mode ``messages-tuple``
(event ``messages``, data ``[message chunk, metadata]``: what ``useStream`` and the chat
UIs read) and ``messages`` (``messages/metadata`` the first time a message id is seen,
then ``messages/partial`` with the message so far, or ``messages/complete`` for a message
that was not streamed).

The metadata is the node's (``langgraph_node``, ``langgraph_step`` ... as the in-process
stream has it) over the run's keys (``graph_id``, ``assistant_id``, ``run_id``,
``thread_id``, ``run_attempt``), as ``langgraph dev`` merges the run's config metadata in;
``run_attempt`` counts the workers that recorded the run (a replacement's tokens are a new
attempt, after a new ``metadata`` event).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChatEvents"]

Event = tuple[str, Any]


class ChatEvents:
    def __init__(self, modes: list[str], run_meta: dict[str, Any]) -> None:
        self.tuples = "messages-tuple" in modes
        self.whole = "messages" in modes
        self.run_meta = run_meta
        self.attempt = 1
        self.so_far: dict[str, Any] = {}

    def events(self, data: Any) -> list[Event]:
        message, node_meta = data
        meta = {**self.run_meta, "run_attempt": self.attempt, **node_meta}
        out: list[Event] = []
        if self.tuples:
            out.append(("messages", [message, meta]))
        if self.whole:
            out.extend(self._whole(message, meta))
        return out

    def _whole(self, message: Any, meta: dict[str, Any]) -> list[Event]:
        from langchain_core.messages import BaseMessageChunk, message_chunk_to_message

        out: list[Event] = []
        key = str(message.id)
        if key in self.so_far and isinstance(message, BaseMessageChunk):
            self.so_far[key] = self.so_far[key] + message
        else:
            self.so_far[key] = message
            out.append(("messages/metadata", {key: {"metadata": meta}}))
        kind = "messages/partial" if isinstance(message, BaseMessageChunk) else "messages/complete"
        out.append((kind, [message_chunk_to_message(self.so_far[key])]))
        return out
