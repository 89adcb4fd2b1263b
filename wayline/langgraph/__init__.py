"""LangGraph on wayline's store: ``WaylineSaver`` (a LangGraph checkpointer) and
``effect`` / ``record`` (wayline's effect ledger inside a LangGraph node).

The only package of wayline that imports LangGraph: ``pip install 'wayline[langgraph]'``.
"""

from __future__ import annotations

from wayline.langgraph.effects import effect, record
from wayline.langgraph.saver import WaylineSaver

__all__ = ["WaylineSaver", "effect", "record"]
