"""What a ``ToolNode`` answers when a tool fails: LangGraph's message templates, its
``ToolInvocationError`` for arguments the tool's schema refuses, and the
``handle_tool_errors`` rules (which errors become an error ``ToolMessage``, with what text).

Mirrors ``langgraph.prebuilt.tool_node`` (MIT, LangChain Inc.) so that messages a model
reads are the same on both.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, cast, get_args, get_origin, get_type_hints

from langchain_core.tools import ToolException
from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES
from pydantic import ValidationError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from wayline.prebuilt.tool_injection import InjectedArgs

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "TOOL_EXECUTION_ERROR_TEMPLATE",
    "TOOL_INVOCATION_ERROR_TEMPLATE",
    "ErrorHandling",
    "ToolInvocationError",
    "handled_types",
    "msg_content_output",
]

INVALID_TOOL_NAME_ERROR_TEMPLATE = (
    "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
)
TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."
TOOL_EXECUTION_ERROR_TEMPLATE = (
    "Error executing tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)
TOOL_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)

ErrorHandling = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]
"""``ToolNode(handle_tool_errors=...)``: True (every error, the default template), a
string, a function of the error (the types it is annotated with), exception types, or
False (every error fails the node)."""


def msg_content_output(output: Any) -> str | list[dict[str, Any]]:
    """A tool's output as ``ToolMessage`` content: strings and content blocks as they are,
    anything else as JSON (non-ASCII kept), else ``str()``."""
    if isinstance(output, str) or (
        isinstance(output, list)
        and all(isinstance(x, dict) and x.get("type") in TOOL_MESSAGE_BLOCK_TYPES for x in output)
    ):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except Exception:
        return str(output)


class ToolInvocationError(ToolException):
    """The model called a tool with arguments its schema refuses (raised by ``ToolNode``
    only); the message lists the refused arguments the model controls."""

    def __init__(
        self,
        tool_name: str,
        source: ValidationError,
        tool_kwargs: dict[str, Any],
        filtered_errors: list[ErrorDetails] | None = None,
    ) -> None:
        if filtered_errors is not None:
            shown = "\n".join(
                f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'Unknown error')}"
                for e in filtered_errors
            )
        else:
            shown = str(source)
        self.message = TOOL_INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=tool_kwargs, error=shown
        )
        self.tool_name = tool_name
        self.tool_kwargs = tool_kwargs
        self.source = source
        self.filtered_errors = filtered_errors
        super().__init__(self.message)


def default_handle_tool_errors(e: Exception) -> str:
    """LangGraph's default: invalid arguments become a message, any other error fails."""
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def handle_tool_error(e: Exception, *, flag: ErrorHandling) -> str:
    """The content of the error ``ToolMessage`` answering ``e``."""
    if isinstance(flag, bool | tuple) or (isinstance(flag, type) and issubclass(flag, Exception)):
        return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))
    if isinstance(flag, str):
        return flag
    if callable(flag):
        return str(cast("Callable[..., str]", flag)(e))
    raise ValueError(
        "Got unexpected type of `handle_tool_error`. Expected bool, str "
        f"or callable. Received: {flag}"
    )


def handled_types(flag: ErrorHandling) -> tuple[type[Exception], ...]:
    """The exception types ``flag`` turns into messages (the rest propagate)."""
    if isinstance(flag, type) and issubclass(flag, Exception):
        return (flag,)
    if isinstance(flag, tuple):
        return flag
    if callable(flag) and not isinstance(flag, type):
        return infer_handled_types(flag)
    return (Exception,)


def infer_handled_types(handler: Callable[..., str]) -> tuple[type[Exception], ...]:
    """The exception types a handler's first parameter is annotated with (``Exception``
    when it has no annotation); ``ValueError`` for an annotation that is not one."""
    params = list(inspect.signature(handler).parameters.values())
    if not params:
        return (Exception,)
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hints = get_type_hints(handler)
    if first.name not in hints:
        return (Exception,)
    if get_origin(first.annotation) in (Union, UnionType):
        args = get_args(first.annotation)
        if all(issubclass(arg, Exception) for arg in args):
            return tuple(args)
        raise ValueError(
            "All types in the error handler error annotation must be "
            "Exception types. For example, "
            "`def custom_handler(e: Union[ValueError, TypeError])`. "
            f"Got '{first.annotation}' instead."
        )
    exception_type = hints[first.name]
    if Exception in getattr(exception_type, "__mro__", ()):
        return (exception_type,)
    raise ValueError(
        "Arbitrary types are not supported in the error handler "
        "signature. Please annotate the error with either a "
        "specific Exception type or a union of Exception types. "
        "For example, `def custom_handler(e: ValueError)` or "
        "`def custom_handler(e: Union[ValueError, TypeError])`. "
        f"Got '{exception_type}' instead."
    )


def filter_validation_errors(
    error: ValidationError, injected: InjectedArgs | None
) -> list[ErrorDetails]:
    """The validation errors of arguments the model controls (injected ones dropped, and
    their values removed from each error's input): the model can fix only those."""
    hidden: set[str] = set()
    if injected:
        hidden.update(injected.state)
        if injected.store:
            hidden.add(injected.store)
        if injected.runtime:
            hidden.add(injected.runtime)
    kept: list[ErrorDetails] = []
    for e in error.errors():
        if e["loc"] and e["loc"][0] not in hidden:
            copy: dict[str, Any] = {**e}
            if isinstance(copy.get("input"), dict):
                copy["input"] = {k: v for k, v in copy["input"].items() if k not in hidden}
            kept.append(copy)  # type: ignore[arg-type]
    return kept
