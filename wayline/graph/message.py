"""Chat messages in state, as ``langgraph.graph.message``: ``add_messages``,
``MessagesState`` and ``REMOVE_ALL_MESSAGES``.

langchain-core is optional (``pip install "wayline[langchain]"``) and imported only when a
message list is actually merged. ``add_messages`` differs from LangGraph's in one way, on
purpose: a message written without an id gets an id derived from its position and content
(uuid5), not a random uuid4, because wayline reconstructs state by folding the stored writes
through the reducer again, and a random id would make the replayed state differ from the
state that ran. As LangGraph's, it sets that id on the message object it is given, so a
caller's input messages carry the id their state gave them.
"""

from __future__ import annotations

import uuid
from functools import partial
from typing import Annotated, Any, TypedDict

from wayline.errors import InvalidUpdateError

__all__ = ["REMOVE_ALL_MESSAGES", "AnyMessage", "MessagesState", "add_messages", "push_message"]

REMOVE_ALL_MESSAGES = "__remove_all__"
"""``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` clears the list; messages after it remain."""

_ID_SPACE = uuid.UUID("5f0b8f6e-4c8a-4a43-9d2b-7a3f1c9e6d10")

AnyMessage = Any
"""langchain-core's ``AnyMessage`` without importing langchain-core."""


def _lc() -> Any:
    try:
        import langchain_core.messages as lc
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise InvalidUpdateError(
            "add_messages merges langchain-core messages: pip install 'wayline[langchain]'"
        ) from None
    return lc


def add_messages(left: Any = None, right: Any = None, **kwargs: Any) -> Any:
    """Merge ``right`` into ``left``: append new messages, replace one with the same id,
    delete on ``RemoveMessage(id)``, clear on ``RemoveMessage(id=REMOVE_ALL_MESSAGES)``.

    Dicts, tuples and strings are converted to messages, as LangGraph does. Called with no
    arguments but keywords (``add_messages(format=...)``) it returns the configured
    reducer, as LangGraph's does.
    """
    if left is None and right is None:
        return partial(_merge, **kwargs)
    if left is None or right is None:
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. Only received: "
            f"'{'left' if left is not None else 'right'}'."
        )
    return _merge(left, right, **kwargs)


def _merge(left: Any, right: Any, *, format: str | None = None) -> list[Any]:
    lc = _lc()
    left_list = _coerce(lc, left if isinstance(left, list) else [left])
    right_list = _coerce(lc, right if isinstance(right, list) else [right])
    left_list = [_with_id(m, len(left_list), i, "l") for i, m in enumerate(left_list)]
    right_list = [_with_id(m, len(left_list), i, "r") for i, m in enumerate(right_list)]
    for idx in range(len(right_list) - 1, -1, -1):
        m = right_list[idx]
        if isinstance(m, lc.RemoveMessage) and m.id == REMOVE_ALL_MESSAGES:
            return right_list[idx + 1 :]
    merged = list(left_list)
    by_id = {m.id: i for i, m in enumerate(merged)}
    removed: set[str] = set()
    for m in right_list:
        at = by_id.get(m.id)
        if at is not None:
            if isinstance(m, lc.RemoveMessage):
                removed.add(m.id)
            else:
                removed.discard(m.id)
                merged[at] = m
        elif isinstance(m, lc.RemoveMessage):
            raise ValueError(
                f"Attempting to delete a message with an ID that doesn't exist ('{m.id}')"
            )
        else:
            by_id[m.id] = len(merged)
            merged.append(m)
    if removed:
        merged = [m for m in merged if m.id not in removed]
    if format == "langchain-openai":
        # as LangGraph: contents as OpenAI's (text and image_url blocks, tool results as
        # ToolMessages); a pure function of the merged list, so replay folds the same
        return list(lc.convert_to_messages(lc.convert_to_openai_messages(merged)))
    if format is not None:
        raise ValueError(
            f"Unrecognized format={format!r}. Expected one of 'langchain-openai', None."
        )
    return merged


def _coerce(lc: Any, messages: list[Any]) -> list[Any]:
    if all(
        isinstance(m, lc.BaseMessage) and not isinstance(m, lc.BaseMessageChunk) for m in messages
    ):
        return messages
    return [lc.message_chunk_to_message(m) for m in lc.convert_to_messages(messages)]


def _with_id(message: Any, base: int, idx: int, side: str) -> Any:
    if message.id is None:
        seed = f"{side}:{base}:{idx}:{message.type}:{message.content!r}"
        message.id = str(uuid.uuid5(_ID_SPACE, seed))
    return message


def _messages_delta_reducer(state: Any, writes: list[Any]) -> Any:
    """As LangGraph's (experimental, for ``DeltaChannel``): a step's writes to a message list
    in one call, each a message or a list of them, merged by ``add_messages`` (ids, updates by
    id, ``RemoveMessage``). It is batching-invariant as ``DeltaChannel`` needs. Unlike
    LangGraph's, it shares ``add_messages``' rules: a missing id is derived, and removing an
    unknown id is an error, not a silent no-op."""
    flat: list[Any] = []
    for write in writes:
        if isinstance(write, list):
            flat.extend(write)
        else:
            flat.append(write)
    return add_messages(state, flat)


class MessagesState(TypedDict):
    """A state with one key, ``messages``, merged by ``add_messages``."""

    messages: Annotated[list[AnyMessage], add_messages]


def push_message(message: Any, *, state_key: str | None = "messages") -> Any:
    """As LangGraph's: from inside a node, stream ``message`` (it needs an id) on the
    ``messages`` stream now, and write it to ``state_key`` (unless None) with the node's
    other writes. Returns the message."""
    from wayline.graph.context import current_scope

    lc = _lc()
    (msg,) = lc.convert_to_messages([message])
    if msg.id is None:
        raise ValueError("Message ID is required: give the message an id to push it")
    scope = current_scope()
    from langchain_core.runnables.config import var_child_runnable_config

    config: Any = var_child_runnable_config.get() or {}
    handler: Any
    for handler in config.get("callbacks") or []:
        stream: Any = getattr(handler, "stream", None)
        if callable(getattr(stream, "send", None)):  # the messages stream (lc_stream)
            stream.send(handler.ns, handler.meta, msg, dedupe=False)
            break
    if state_key:
        scope.pushed.append((state_key, msg))
    return msg
