"""Finding a user's graph from the command line: ``package.module:attribute`` or
``path/to/file.py:attribute``; the attribute may be a compiled graph, a StateGraph, or a
function of no arguments returning either.

Every way this can go wrong (no such file, an import that raises, a factory that wants
arguments or raises) is a ``GraphLoadError`` with one line saying which, so that
``wayline worker`` prints that line instead of a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from wayline.errors import GraphLoadError, WaylineError
from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.store.base import Store
from wayline.worker.engine import Engine, WaylineEngine
from wayline.worker.engines import engine_for

__all__ = ["check_importable", "load_engine", "load_graph", "load_object"]


def load_engine(spec: str, store: Store) -> Engine:
    """A graph for a worker or the server: a wayline graph, or a LangGraph graph (a
    ``CompiledStateGraph``, an ``@entrypoint``, a LangGraph ``StateGraph`` compiled here, or a
    factory of one), behind the engine seam."""
    obj = load_object(spec)
    if _is_langgraph(obj):
        if hasattr(obj, "compile") and not hasattr(obj, "stream"):  # a LangGraph StateGraph
            obj = obj.compile()
        try:
            return engine_for(obj).bind(store)
        except WaylineError as exc:
            raise GraphLoadError(f"{spec!r}: {exc}") from exc
    return WaylineEngine(_as_graph(spec, obj, store))


def load_graph(spec: str, store: Store) -> CompiledGraph:
    return _as_graph(spec, load_object(spec), store)


def _is_langgraph(obj: Any) -> bool:
    return type(obj).__module__.startswith("langgraph.")


def load_object(spec: str) -> Any:
    """What ``module:attribute`` names (a factory of no arguments called)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise GraphLoadError(f"graph {spec!r} must look like module:attribute or file.py:attribute")
    obj = getattr(_module(module_name), attr, None)
    if obj is None:
        raise GraphLoadError(f"{module_name!r} has no attribute {attr!r}")
    if callable(obj) and not isinstance(obj, CompiledGraph | StateGraph) and not _is_langgraph(obj):
        obj = _call_factory(spec, obj)
    return obj


def _as_graph(spec: str, obj: Any, store: Store) -> CompiledGraph:
    if isinstance(obj, StateGraph):
        return obj.compile(store)
    if isinstance(obj, CompiledGraph):
        return obj.with_store(store)
    raise GraphLoadError(
        f"{spec!r} is a {type(obj).__name__}, not a graph: name a compiled graph, a "
        "StateGraph, or a function of no arguments returning one"
    )


def check_importable(spec: str) -> None:
    """Import what ``spec`` names and check that the attribute is there, touching no store:
    a command that would create a database checks its graphs first, so a typo leaves no
    database file behind. (The module stays imported: loading it later costs nothing.)"""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise GraphLoadError(f"graph {spec!r} must look like module:attribute or file.py:attribute")
    if getattr(_module(module_name), attr, None) is None:
        raise GraphLoadError(f"{module_name!r} has no attribute {attr!r}")


def _call_factory(spec: str, factory: Any) -> Any:
    try:
        inspect.signature(factory).bind()
    except TypeError:
        raise GraphLoadError(
            f"{spec!r} is a function of {inspect.signature(factory)}: a graph factory takes "
            "no arguments (wrap it: def graph(): return build(...))"
        ) from None
    except ValueError:  # no signature to inspect (a builtin): let the call decide
        pass
    try:
        return factory()
    except Exception as exc:
        raise GraphLoadError(f"calling {spec!r} raised {type(exc).__name__}: {exc}") from exc


def _module(name: str) -> Any:
    if name.endswith(".py"):
        path = Path(name).resolve()
        if not path.is_file():
            raise GraphLoadError(f"no file {name!r} (looked for {path})")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise GraphLoadError(f"cannot load {name!r} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[path.stem]
            raise GraphLoadError(f"importing {name!r} raised {type(exc).__name__}: {exc}") from exc
        return module
    if "" not in sys.path:
        sys.path.insert(0, "")  # a module in the working directory, as `python -m` finds it
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise GraphLoadError(f"cannot import {name!r}: {exc}") from exc
    except Exception as exc:
        raise GraphLoadError(f"importing {name!r} raised {type(exc).__name__}: {exc}") from exc
