"""``langgraph.channels.delta`` under its ported name (``wayline.graph.channels.delta``)."""

from wayline.graph.channels.delta import DeltaChannel

__all__ = ["DeltaChannel"]
