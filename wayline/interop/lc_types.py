"""langchain-core message types the codec knows by name, so that a chat history is stored
as msgpack (never pickle) without the user registering anything.

Only the classes listed here are ever imported on read: a stored type name is looked up
in this fixed table, so a checkpoint cannot make the reader import arbitrary code.
langchain-core itself is imported only when such a value is first encoded or decoded.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["KNOWN", "load", "name_of"]

_MODULE = "langchain_core.messages"

KNOWN: dict[str, str] = {
    f"langchain.{cls}": cls
    for cls in (
        "AIMessage",
        "AIMessageChunk",
        "ChatMessage",
        "ChatMessageChunk",
        "FunctionMessage",
        "FunctionMessageChunk",
        "HumanMessage",
        "HumanMessageChunk",
        "RemoveMessage",
        "SystemMessage",
        "SystemMessageChunk",
        "ToolMessage",
        "ToolMessageChunk",
    )
}
_BY_CLASS = {cls: name for name, cls in KNOWN.items()}


def name_of(cls: type) -> str | None:
    """The stored name of a langchain-core message class, if it is one we know."""
    if not cls.__module__.startswith("langchain_core.messages"):
        return None
    name = _BY_CLASS.get(cls.__name__)
    if name is None or load(name) is not cls:
        return None
    return name


def load(name: str) -> type[Any] | None:
    """The class stored as ``name``, or None when the name is not in the table or
    langchain-core is not installed."""
    cls_name = KNOWN.get(name)
    if cls_name is None:
        return None
    try:
        module = importlib.import_module(_MODULE)
    except ImportError:
        return None
    cls = getattr(module, cls_name, None)
    return cls if isinstance(cls, type) else None
