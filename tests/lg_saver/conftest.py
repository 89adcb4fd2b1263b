"""LangGraph tests run only where LangGraph is installed (the ``[langgraph]`` extra, part of
``[dev]``); without it, collection skips this folder and says why."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason="needs the wayline[langgraph] extra")
