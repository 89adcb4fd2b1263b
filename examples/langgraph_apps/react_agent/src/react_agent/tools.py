"""This module provides example tools for web scraping and search functionality.

wayline: the template's Tavily search, answered from a local table (no network); the
signature, the runtime context and the async shape are the template's.
"""

from typing import Any, Callable, List, Optional, cast

from langgraph.runtime import get_runtime

from react_agent.context import Context

RESULTS = [
    {"url": "https://example.invalid/wayline", "content": "wayline: durable agent graphs"},
    {"url": "https://example.invalid/langgraph", "content": "LangGraph: agent graphs"},
]


async def search(query: str) -> Optional[dict[str, Any]]:
    """Search for general web results.

    This function performs a search using the Tavily search engine, which is designed
    to provide comprehensive, accurate, and trusted results. It's particularly useful
    for answering questions about current events.
    """
    runtime = get_runtime(Context)
    found = RESULTS[: int(runtime.context.max_search_results)]
    return cast(dict[str, Any], {"query": query, "results": found})


TOOLS: List[Callable[..., Any]] = [search]
