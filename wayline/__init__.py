"""wayline: a durable execution runtime for stateful agent graphs."""

from wayline.classes import Classified, Redacted
from wayline.client import Wayline
from wayline.codec import register_type
from wayline.config import get_config, get_store, get_stream_writer
from wayline.control import Actor
from wayline.control.policy import DataPolicy, Retain
from wayline.effects import NOT_FOUND, RetryPolicy
from wayline.errors import WaylineError
from wayline.func import entrypoint, task
from wayline.graph import (
    END,
    START,
    Command,
    CompiledGraph,
    Interrupt,
    MessagesState,
    NodeContext,
    Send,
    StateGraph,
    StateSnapshot,
    add_messages,
    interrupt,
)
from wayline.graph.cache import CachePolicy
from wayline.graph.timeouts import TimeoutPolicy
from wayline.graph.types import OnExpire
from wayline.graph.wakeups import sleep, sleep_until
from wayline.memory import DurableStore, InMemoryStore
from wayline.runtime import Runtime, get_runtime
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
    "CachePolicy",
    "Classified",
    "Command",
    "CompiledGraph",
    "DataPolicy",
    "DurableStore",
    "InMemoryStore",
    "Interrupt",
    "MessagesState",
    "NodeContext",
    "OnExpire",
    "Redacted",
    "Retain",
    "RetryPolicy",
    "Runtime",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "Store",
    "TimeoutPolicy",
    "Wayline",
    "WaylineError",
    "Worker",
    "WorkerConfig",
    "add_messages",
    "connect",
    "entrypoint",
    "get_config",
    "get_runtime",
    "get_store",
    "get_stream_writer",
    "interrupt",
    "open_store",
    "register_type",
    "sleep",
    "sleep_until",
    "task",
]
