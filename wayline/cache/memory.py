"""``langgraph.cache.memory``: a process-local node cache (``wayline.graph.cache``)."""

from wayline.graph.cache import InMemoryCache

__all__ = ["InMemoryCache"]
