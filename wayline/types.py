"""The value types of the graph API at LangGraph's path (``langgraph.types``), so that a
ported program changes only its imports."""

from wayline.effects.retry import RetryPolicy
from wayline.graph.cache import CachePolicy
from wayline.graph.channels.overwrite import Overwrite
from wayline.graph.context import interrupt
from wayline.graph.timeouts import TimeoutPolicy
from wayline.graph.types import (
    Command,
    Durability,
    Interrupt,
    PregelTask,
    Send,
    StateSnapshot,
    StreamMode,
    StreamWriter,
)
from wayline.graph.updates import StateUpdate

__all__ = [
    "CachePolicy",
    "Command",
    "Durability",
    "Interrupt",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StateUpdate",
    "StreamMode",
    "StreamWriter",
    "TimeoutPolicy",
    "interrupt",
]
