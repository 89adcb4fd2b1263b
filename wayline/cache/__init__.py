"""LangGraph's node caches at LangGraph's path (``langgraph.cache``): ``wayline.cache.memory``
holds ``InMemoryCache``, ``wayline.cache.base`` the interface; the logic is in
``wayline.graph.cache``."""
