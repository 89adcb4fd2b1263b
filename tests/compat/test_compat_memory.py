"""Memory programs written against LangGraph (``memory_programs/``) give the same
observations on wayline after the port, with wayline's InMemoryStore (what the import
rename gives) and with a DurableStore on the run's own database (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import wayline
from wayline.memory import DurableStore

PROGRAMS = Path(__file__).parent / "memory_programs"
NAMES = ["memory_agent", "store_access", "functional_memory", "semantic_search"]
RENAMES = [
    ("langgraph.store.memory", "wayline.memory.in_memory"),
    ("langgraph.store.base", "wayline.memory.base"),
    ("langgraph", "wayline"),
]
"""The port's module map for memory (``langgraph.store`` names wayline's run store
``wayline.store``, so long-term memory is ``wayline.memory``; docs/porting.md)."""


def port(text: str) -> str:
    for old, new in RENAMES:
        text = re.sub(rf"^(\s*)(from|import) {re.escape(old)}\b", rf"\1\2 {new}", text, flags=re.M)
    return text


def load(name: str, flavor: str) -> types.ModuleType:
    text = (PROGRAMS / f"{name}.py").read_text()
    text = text if flavor == "langgraph" else port(text)
    module = types.ModuleType(f"memory_{name}_{flavor}")
    module.__file__ = str(PROGRAMS / f"{name}.py")
    sys.modules[module.__name__] = module
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


def observe(name: str, flavor: str, url: str | None = None) -> list[Any]:
    module = load(name, flavor)
    if flavor == "langgraph":
        from langgraph.checkpoint.memory import InMemorySaver

        return _plain(module.main(InMemorySaver()))
    assert url is not None
    checkpointer = wayline.connect(url)
    try:
        store = None
        if flavor == "wayline-durable":
            store = DurableStore(checkpointer, index=getattr(module, "INDEX", None))
        return _plain(module.main(checkpointer, store))
    finally:
        checkpointer.close()


def _plain(value: Any) -> list[Any]:
    out = _plain_value(value)
    assert isinstance(out, list)
    return out


def _plain_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_value(v) for v in value]
    return value


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("flavor", ["wayline-in-memory", "wayline-durable"])
def test_memory_program_runs_the_same(name: str, flavor: str, tmp_path: Path) -> None:
    expected = observe(name, "langgraph")
    assert observe(name, flavor, f"sqlite:///{tmp_path / 'memory.db'}") == expected


@pytest.mark.parametrize("name", ["memory_agent", "semantic_search"])
def test_memory_program_runs_the_same_on_postgresql(name: str, pg_url: str) -> None:
    assert observe(name, "wayline-durable", pg_url) == observe(name, "langgraph")


def test_the_port_only_renames_imports() -> None:
    for name in NAMES:
        original = (PROGRAMS / f"{name}.py").read_text()
        ported = port(original)
        changed = [
            (a, b)
            for a, b in zip(original.splitlines(), ported.splitlines(), strict=True)
            if a != b
        ]
        assert changed and all(a.startswith("from langgraph") for a, _ in changed)
        assert "langgraph" not in ported
