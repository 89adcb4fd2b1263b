"""LangGraph on wayline's store: ``WaylineSaver`` (a LangGraph checkpointer),
``effect`` / ``record`` (wayline's effect ledger inside a LangGraph node),
``LangGraphEngine`` (LangGraph's own engine on wayline's workers: ``engine``), and
``WaylineStore`` (a LangGraph ``BaseStore`` on wayline's long-term memory: ``store``).

The only package of wayline that imports LangGraph: ``pip install 'wayline[langgraph]'``.
"""

from __future__ import annotations

from wayline.langgraph.effects import effect, record
from wayline.langgraph.engine import LangGraphEngine
from wayline.langgraph.saver import WaylineSaver
from wayline.langgraph.store import WaylineStore

__all__ = ["LangGraphEngine", "WaylineSaver", "WaylineStore", "effect", "record"]
