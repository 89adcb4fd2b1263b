"""wayline: a durable execution runtime for stateful agent graphs."""

from wayline.client import Wayline
from wayline.codec import register_type
from wayline.control import Actor
from wayline.effects import NOT_FOUND, RetryPolicy
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
from wayline.worker import Worker, WorkerConfig

connect = open_store
"""Open a store by URL: ``wayline.connect("sqlite:///runs.db")``."""

__version__ = "0.1.0"

__all__ = [
    "END",
    "NOT_FOUND",
    "START",
    "Actor",
    "Command",
    "CompiledGraph",
    "Interrupt",
    "NodeContext",
    "RetryPolicy",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "Store",
    "Wayline",
    "WaylineError",
    "Worker",
    "WorkerConfig",
    "connect",
    "interrupt",
    "open_store",
    "register_type",
]
