"""``langgraph.constants``: START and END."""

from wayline.graph.types import END, START

__all__ = ["END", "START"]
