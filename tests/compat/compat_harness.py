"""Run a program written against LangGraph on LangGraph and, with its imports renamed, on
wayline; compare what each observed.

A program is a module in ``programs/`` with ``main(checkpointer) -> list``: the
observations it makes (results, streamed chunks, states). The port is the mechanical one
a user makes: every ``langgraph`` import becomes ``wayline``, and the checkpointer passed in
is a wayline store (a real SQLite file) instead of LangGraph's ``InMemorySaver``.
Observations are compared after ``plain``: message ids (random uuid4 in LangGraph, derived
in wayline) and the ids of interrupts and tasks are dropped, tuples read as lists.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from pathlib import Path
from typing import Any

PROGRAMS = Path(__file__).parent / "programs"


def source(name: str) -> str:
    return (PROGRAMS / f"{name}.py").read_text()


def port(text: str) -> str:
    """The rename: ``from langgraph.x import y`` -> ``from wayline.x import y``."""
    return re.sub(r"^(\s*)(from|import) langgraph\b", r"\1\2 wayline", text, flags=re.M)


def load(name: str, flavor: str) -> types.ModuleType:
    text = source(name) if flavor == "langgraph" else port(source(name))
    module = types.ModuleType(f"compat_{name}_{flavor}")
    module.__file__ = str(PROGRAMS / f"{name}.py")
    sys.modules[module.__name__] = module  # typing.get_type_hints looks classes up there
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


def run(name: str, flavor: str, tmp_path: Path, url: str | None = None) -> list[Any]:
    module = load(name, flavor)
    if flavor == "langgraph":
        from langgraph.checkpoint.memory import InMemorySaver

        checkpointer: Any = InMemorySaver()
    else:
        import wayline

        checkpointer = wayline.connect(url or f"sqlite:///{tmp_path / (name + '.db')}")
    try:
        return list(module.main(checkpointer))
    finally:
        close = getattr(checkpointer, "close", None)
        if callable(close) and flavor == "wayline":
            close()


def plain(value: Any) -> Any:
    """A comparable form: messages by type and content, interrupts by value."""
    kind = type(value).__name__
    if hasattr(value, "content") and hasattr(value, "type") and hasattr(value, "id"):
        out = {"type": value.type, "content": plain(value.content)}
        calls = getattr(value, "tool_calls", None)
        if calls:
            out["tool_calls"] = [(c["name"], plain(c["args"])) for c in calls]
        if getattr(value, "name", None):
            out["name"] = value.name
        return out
    if kind == "Interrupt":
        return {"interrupt": plain(value.value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    return value
