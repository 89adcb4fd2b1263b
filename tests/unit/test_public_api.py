"""The public surface: a curated, sorted ``__all__`` that changes only on purpose."""

from __future__ import annotations

import importlib

import pytest

import wayline
import wayline.errors

PUBLIC = [
    "END",
    "NOT_FOUND",
    "START",
    "Actor",
    "CachePolicy",
    "Classified",
    "Command",
    "CompiledGraph",
    "DataPolicy",
    "DurableStore",
    "InMemoryStore",
    "Interrupt",
    "MessagesState",
    "NodeContext",
    "OnExpire",
    "Redacted",
    "Retain",
    "RetryPolicy",
    "Runtime",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "Store",
    "TimeoutPolicy",
    "Wayline",
    "WaylineError",
    "Worker",
    "WorkerConfig",
    "add_messages",
    "connect",
    "entrypoint",
    "get_config",
    "get_runtime",
    "get_store",
    "get_stream_writer",
    "interrupt",
    "open_store",
    "register_type",
    "sleep",
    "sleep_until",
    "task",
]


def test_all_is_pinned() -> None:
    assert wayline.__all__ == PUBLIC, "wayline.__all__ changed: update this pin on purpose"


def isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_without_duplicates() -> None:
    assert wayline.__all__ == sorted(wayline.__all__, key=isort_key)
    assert len(set(wayline.__all__)) == len(wayline.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_is_importable(name: str) -> None:
    module = importlib.import_module("wayline")
    assert getattr(module, name) is not None
    namespace: dict[str, object] = {}
    exec(f"from wayline import {name}", namespace)  # the form users write
    assert namespace[name] is getattr(wayline, name)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from wayline import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(PUBLIC)


def test_constants_and_aliases() -> None:
    assert (wayline.START, wayline.END) == ("__start__", "__end__")  # LangGraph's values
    assert wayline.connect is wayline.open_store
    assert isinstance(wayline.__version__, str) and wayline.__version__


ERRORS_FROM_THE_BRIEF = [
    "WaylineError",
    "GraphError",
    "DuplicateNodeError",
    "UnknownNodeError",
    "NoPathToEndError",
    "InvalidUpdateError",
    "ReducerError",
    "CodecError",
    "StepLimitError",
    "GraphRecursionError",
    "StoreError",
    "StoreURLError",
    "RunNotFoundError",
    "LeaseConflictError",
    "ResumeError",
    "WaylineSignal",
    "GraphInterrupt",
    "LeaseLost",
]


def test_errors_module_exports_the_documented_errors() -> None:
    assert set(ERRORS_FROM_THE_BRIEF) <= set(wayline.errors.__all__)
    assert wayline.errors.__all__ == sorted(wayline.errors.__all__, key=isort_key)


@pytest.mark.parametrize("name", wayline.errors.__all__)
def test_every_error_is_importable_and_rooted(name: str) -> None:
    cls = getattr(wayline.errors, name)
    assert isinstance(cls, type)
    assert issubclass(cls, wayline.errors.WaylineError | wayline.errors.WaylineSignal)


def test_signals_are_not_exceptions() -> None:
    for signal in (wayline.errors.GraphInterrupt, wayline.errors.LeaseLost):
        assert issubclass(signal, BaseException)
        assert not issubclass(signal, Exception)
    assert wayline.errors.WaylineError is wayline.WaylineError
