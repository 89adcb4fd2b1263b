"""Arguments a ``ToolNode`` fills in itself, hidden from the model: the graph state
(``InjectedState``), the memory store (``InjectedStore``) and the ``ToolRuntime`` of the
call, and the request a ``wrap_tool_call`` interceptor receives (``ToolCallRequest``).

Mirrors ``langgraph.prebuilt.tool_node`` (MIT, LangChain Inc.): a tool written for
LangGraph declares its hidden arguments the same way on wayline.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Generic, Literal, TypedDict, Union, get_args, get_origin

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables.config import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolArg
from langchain_core.tools.base import (
    _DirectlyInjectedToolArg,
    _is_injected_arg_type,
    get_all_basemodel_annotations,
)
from typing_extensions import TypeVar

from wayline.graph.types import Command, StreamWriter

__all__ = [
    "AsyncToolCallWrapper",
    "InjectedArgs",
    "InjectedState",
    "InjectedStore",
    "ToolCallRequest",
    "ToolCallWithContext",
    "ToolCallWrapper",
    "ToolRuntime",
    "injected_args_of",
]

StateT = TypeVar("StateT", default=dict)  # type: ignore[type-arg]
ContextT = TypeVar("ContextT", default=None)


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """What a tool parameter annotated ``ToolRuntime`` (or named ``runtime``) receives: the
    state, the call's id and config, the run's context, store and stream writer."""

    state: StateT
    context: ContextT
    config: RunnableConfig
    stream_writer: StreamWriter
    tool_call_id: str | None
    store: Any
    tools: list[BaseTool] = field(default_factory=list)
    execution_info: Any = None
    server_info: Any = None

    def emit_output_delta(self, delta: Any) -> None:
        """LangGraph streams partial tool output on its ``tools`` stream mode, which
        wayline does not have: the delta goes nowhere."""


class InjectedState(InjectedToolArg):
    """``Annotated[dict, InjectedState]`` receives the whole graph state;
    ``Annotated[list, InjectedState("messages")]`` one key of it."""

    def __init__(self, field: str | None = None) -> None:
        self.field = field


class InjectedStore(InjectedToolArg):
    """``Annotated[BaseStore, InjectedStore()]`` receives the graph's memory store
    (``compile(store=...)``)."""


class ToolCallWithContext(TypedDict):
    """One tool call sent to a ``ToolNode`` with the state it was made in (the payload of
    the ``Send`` that ``create_react_agent`` v2 uses per call)."""

    tool_call: ToolCall
    __type: Literal["tool_call_with_context"]
    state: Any


class _RequestOverrides(TypedDict, total=False):
    tool_call: ToolCall
    tool: BaseTool
    state: Any


@dataclass
class ToolCallRequest:
    """What a ``wrap_tool_call`` interceptor receives: the call, the tool (None when the
    node does not know it), the state and the ``ToolRuntime``."""

    tool_call: ToolCall
    tool: BaseTool | None
    state: Any
    runtime: ToolRuntime[Any, Any]

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "__dataclass_fields__") and hasattr(self, name):
            warnings.warn(
                f"Setting attribute '{name}' on ToolCallRequest is deprecated. "
                "Use the override() method instead to create a new instance with "
                "modified values.",
                DeprecationWarning,
                stacklevel=2,
            )
        object.__setattr__(self, name, value)

    def override(self, **overrides: Any) -> ToolCallRequest:
        """A copy with ``overrides`` (``tool_call``, ``tool``, ``state``) replaced."""
        return replace(self, **overrides)


ToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], "ToolMessage | Command[Any]"]],
    "ToolMessage | Command[Any]",
]
AsyncToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable["ToolMessage | Command[Any]"]]],
    Awaitable["ToolMessage | Command[Any]"],
]


@dataclass
class InjectedArgs:
    """A tool's hidden arguments, found once when the node is built: parameter -> state
    key (None: the whole state), the store and runtime parameters, and every injected
    name (stripped from what the model sent, so that it cannot forge them)."""

    state: dict[str, str | None]
    store: str | None
    runtime: str | None
    all_injected_keys: set[str]
    optional_state_args: set[str]


_Kind = type[InjectedState] | type[InjectedStore] | type[ToolRuntime]


def _is_injection(type_arg: Any, kind: _Kind) -> bool:
    if isinstance(type_arg, kind) or (isinstance(type_arg, type) and issubclass(type_arg, kind)):
        return True
    origin = get_origin(type_arg)
    if origin is Union or origin is Annotated:
        return any(_is_injection(a, kind) for a in get_args(type_arg))
    return origin is not None and (
        origin is kind or (isinstance(origin, type) and issubclass(origin, kind))
    )


def _injection_of(type_: Any, kind: _Kind) -> Any:
    matches = [a for a in get_args(type_) if _is_injection(a, kind)]
    if len(matches) > 1:
        raise ValueError(
            f"A tool argument should not be annotated with {kind.__name__} "
            f"more than once. Found: {matches}"
        )
    if matches:
        return matches[0]
    return True if _is_injection(type_, kind) else None


def injected_args_of(tool: BaseTool) -> InjectedArgs:
    """The hidden arguments ``tool`` declares, from its schema and its function."""
    import typing

    schema = tool.get_input_schema()
    annotations = get_all_basemodel_annotations(schema)
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    func_hints = typing.get_type_hints(func, include_extras=True) if func else {}
    state: dict[str, str | None] = {}
    store: str | None = None
    runtime: str | None = None
    keys: set[str] = set()
    optional: set[str] = set()
    for name, type_ in {**func_hints, **annotations}.items():
        if _is_injected_arg_type(type_):
            keys.add(name)
        if name == "runtime":
            runtime = name
        if found := _injection_of(type_, InjectedState):
            if isinstance(found, InjectedState) and found.field:
                state[name] = found.field
                info = getattr(schema, "model_fields", {}).get(name)
                if info and not info.is_required():
                    optional.add(name)
            else:
                state[name] = None
        if _injection_of(type_, InjectedStore):
            store = name
        if _injection_of(type_, ToolRuntime):
            runtime = name
    return InjectedArgs(state, store, runtime, keys, optional)
