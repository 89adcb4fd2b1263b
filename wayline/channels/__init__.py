"""``langgraph.channels`` under its ported name: the channel kinds a LangGraph state schema
names in its annotations (``DeltaChannel``). Wayline's own channels are in
``wayline.graph.channels``."""

from wayline.graph.channels.delta import DeltaChannel

__all__ = ["DeltaChannel"]
