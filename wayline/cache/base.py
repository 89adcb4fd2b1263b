"""``langgraph.cache.base``: the node cache interface (``wayline.graph.cache``)."""

from wayline.graph.cache import BaseCache, FullKey, Namespace

__all__ = ["BaseCache", "FullKey", "Namespace"]
