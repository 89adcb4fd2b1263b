"""Finding a user's graph from the command line: ``package.module:attribute`` or
``path/to/file.py:attribute``; the attribute may be a compiled graph, a StateGraph, or a
function of no arguments returning either."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from wayline.errors import WaylineError
from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.store.base import Store

__all__ = ["load_graph"]


def load_graph(spec: str, store: Store) -> CompiledGraph:
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise WaylineError(f"graph {spec!r} must look like module:attribute or file.py:attribute")
    obj = getattr(_module(module_name), attr, None)
    if obj is None:
        raise WaylineError(f"{module_name!r} has no attribute {attr!r}")
    if callable(obj) and not isinstance(obj, CompiledGraph | StateGraph):
        obj = obj()
    if isinstance(obj, StateGraph):
        return obj.compile(store)
    if isinstance(obj, CompiledGraph):
        return obj.with_store(store)
    raise WaylineError(f"{spec!r} is a {type(obj).__name__}, not a graph")


def _module(name: str) -> Any:
    if name.endswith(".py"):
        path = Path(name).resolve()
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise WaylineError(f"cannot load {name!r}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        module_spec.loader.exec_module(module)
        return module
    if "" not in sys.path:
        sys.path.insert(0, "")  # a module in the working directory, as `python -m` finds it
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise WaylineError(f"cannot import {name!r}: {exc}") from exc
