"""``langgraph.graph.state``'s names, for programs that import or annotate with them."""

from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph

CompiledStateGraph = CompiledGraph
"""LangGraph's name for a compiled ``StateGraph``."""

__all__ = ["CompiledStateGraph", "StateGraph"]
