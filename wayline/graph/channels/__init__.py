"""Channel kinds: one small module each, one contract (update, get, checkpoint, restore)."""

from wayline.graph.channels.append_log import APPEND_REDUCERS, AppendLog
from wayline.graph.channels.barrier import Barrier
from wayline.graph.channels.base import MISSING, Channel
from wayline.graph.channels.delta import DeltaChannel
from wayline.graph.channels.last_value import LastValue
from wayline.graph.channels.message_log import MessageLog
from wayline.graph.channels.reducer import ReducerChannel

__all__ = [
    "APPEND_REDUCERS",
    "MISSING",
    "AppendLog",
    "Barrier",
    "Channel",
    "DeltaChannel",
    "LastValue",
    "MessageLog",
    "ReducerChannel",
]
