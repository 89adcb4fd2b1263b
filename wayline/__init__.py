"""wayline: a durable execution runtime for stateful agent graphs."""

from wayline.codec import register_type
from wayline.errors import WaylineError
from wayline.graph import (
    END,
    START,
    Command,
    CompiledGraph,
    Interrupt,
    NodeContext,
    Send,
    StateGraph,
    StateSnapshot,
    interrupt,
)
from wayline.store import Store, open_store

connect = open_store
"""Open a store by URL: ``wayline.connect("sqlite:///runs.db")``."""

__version__ = "0.1.0"

__all__ = [
    "END",
    "START",
    "Command",
    "CompiledGraph",
    "Interrupt",
    "NodeContext",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "Store",
    "WaylineError",
    "connect",
    "interrupt",
    "open_store",
    "register_type",
]
