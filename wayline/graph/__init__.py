"""The graph plane: builder, channels, the pure superstep fold and the run loop."""

from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.graph.context import NodeContext, interrupt
from wayline.graph.message import MessagesState, add_messages
from wayline.graph.types import END, START, Command, Interrupt, Send, StateSnapshot

__all__ = [
    "END",
    "START",
    "Command",
    "CompiledGraph",
    "Interrupt",
    "MessagesState",
    "NodeContext",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "add_messages",
    "interrupt",
]
