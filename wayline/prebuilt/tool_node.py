"""``ToolNode``: run the tool calls of the last AI message and answer each with a
``ToolMessage`` (or apply the ``Command`` a tool returns), as LangGraph's prebuilt node
does; ``tools_condition`` routes to it.

A ``ToolNode`` is a langchain-core ``Runnable`` (``invoke``/``ainvoke`` on a state dict, a
list of messages or a list of tool calls) and a wayline graph node. Tools of one call run
in parallel threads (or coroutines under ``ainvoke``). Which errors become an error
``ToolMessage`` is ``handle_tool_errors`` (see ``tool_errors``); the default answers only
arguments the tool's schema refuses, so that the model can correct itself.

Mirrors ``langgraph.prebuilt.tool_node`` (MIT, LangChain Inc.).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from copy import copy, deepcopy
from dataclasses import replace
from typing import Any, Literal, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    RemoveMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import (
    RunnableConfig,
    ensure_config,
    get_config_list,
    get_executor_for_config,
)
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from pydantic import BaseModel, ValidationError

from wayline.graph.message import REMOVE_ALL_MESSAGES
from wayline.graph.types import Command, Send
from wayline.prebuilt._sync import run_sync
from wayline.prebuilt.tool_commands import executable, unwrap
from wayline.prebuilt.tool_errors import (
    INVALID_TOOL_NAME_ERROR_TEMPLATE,
    TOOL_CALL_ERROR_TEMPLATE,
    TOOL_EXECUTION_ERROR_TEMPLATE,
    TOOL_INVOCATION_ERROR_TEMPLATE,
    ErrorHandling,
    ToolInvocationError,
    default_handle_tool_errors,
    filter_validation_errors,
    handle_tool_error,
    handled_types,
    infer_handled_types,
    msg_content_output,
)
from wayline.prebuilt.tool_injection import (
    AsyncToolCallWrapper,
    InjectedArgs,
    InjectedState,
    InjectedStore,
    ToolCallRequest,
    ToolCallWithContext,
    ToolCallWrapper,
    ToolRuntime,
    injected_args_of,
)

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "TOOL_EXECUTION_ERROR_TEMPLATE",
    "TOOL_INVOCATION_ERROR_TEMPLATE",
    "InjectedState",
    "InjectedStore",
    "ToolCallRequest",
    "ToolCallWithContext",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "msg_content_output",
    "tools_condition",
]

_infer_handled_types = infer_handled_types  # LangGraph's private name, which its tests use

InputType = Literal["list", "dict", "tool_calls"]
Output = ToolMessage | Command[Any] | list[ToolMessage | Command[Any]]

_RUNTIME_KEY = "__pregel_runtime"
"""Where LangGraph's config carries the node's runtime (its tests set it by hand)."""


class ToolNode(Runnable[Any, Any]):
    """A node that executes the tool calls of the last ``AIMessage`` in ``messages_key``."""

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: ErrorHandling = default_handle_tool_errors,
        messages_key: str = "messages",
        wrap_tool_call: ToolCallWrapper | None = None,
        awrap_tool_call: AsyncToolCallWrapper | None = None,
    ) -> None:
        self.name = name
        self.__name__ = name
        self.tags = tags
        self._tools_by_name: dict[str, BaseTool] = {}
        self._injected_args: dict[str, InjectedArgs] = {}
        self._handle_tool_errors = handle_tool_errors
        self._messages_key = messages_key
        self._wrap_tool_call = wrap_tool_call
        self._awrap_tool_call = awrap_tool_call
        self._executables: dict[int, tuple[BaseTool, BaseTool]] = {}
        for t in tools:
            bound = t if isinstance(t, BaseTool) else create_tool(t)
            self._tools_by_name[bound.name] = bound
            self._injected_args[bound.name] = injected_args_of(bound)

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        return self._tools_by_name

    @property
    def messages_key(self) -> str:
        return self._messages_key

    @property
    def handle_tool_errors(self) -> ErrorHandling:
        return self._handle_tool_errors

    # -- entry points -------------------------------------------------------------------

    def __call__(self, input: Any, config: RunnableConfig | None = None) -> Any:
        """As a wayline graph node (sync, so that it runs under both invoke and ainvoke)."""
        return self.invoke(input, config)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        config = ensure_config(config)
        calls, input_type = self._parse_input(input)
        runtimes = self._runtimes(input, calls, config)
        with get_executor_for_config(config) as executor:
            outputs = list(executor.map(self._run_one, calls, [input_type] * len(calls), runtimes))
        return self._combine_tool_outputs(outputs, input_type)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        config = ensure_config(config)
        calls, input_type = self._parse_input(input)
        runtimes = self._runtimes(input, calls, config)
        outputs = await asyncio.gather(
            *(self._arun_one(c, input_type, r) for c, r in zip(calls, runtimes, strict=True))
        )
        return self._combine_tool_outputs(list(outputs), input_type)

    def _runtimes(
        self, input: Any, calls: list[ToolCall], config: RunnableConfig
    ) -> list[ToolRuntime[Any, Any]]:
        runtime = _node_runtime(config)
        tools = list(self._tools_by_name.values())
        return [
            ToolRuntime(
                state=self._extract_state(input),
                tool_call_id=call["id"],
                config=cfg,
                context=runtime.context,
                store=getattr(runtime, "store", None),
                stream_writer=runtime.stream_writer,
                tools=tools,
                execution_info=getattr(runtime, "execution_info", None),
                server_info=getattr(runtime, "server_info", None),
            )
            for call, cfg in zip(calls, get_config_list(config, len(calls)), strict=True)
        ]

    # -- one call -----------------------------------------------------------------------

    def _run_one(
        self, call: ToolCall, input_type: InputType, runtime: ToolRuntime[Any, Any]
    ) -> Output:
        request = ToolCallRequest(
            tool_call=call,
            tool=self._tools_by_name.get(call["name"]),
            state=runtime.state,
            runtime=runtime,
        )
        config = runtime.config
        if self._wrap_tool_call is None:
            return self._execute_sync(request, input_type, config)

        def execute(req: ToolCallRequest) -> Any:
            return self._execute_sync(req, input_type, config)

        try:
            return self._wrap_tool_call(request, execute)
        except Exception as exc:
            return self._wrapper_failed(exc, request)

    async def _arun_one(
        self, call: ToolCall, input_type: InputType, runtime: ToolRuntime[Any, Any]
    ) -> Output:
        request = ToolCallRequest(
            tool_call=call,
            tool=self._tools_by_name.get(call["name"]),
            state=runtime.state,
            runtime=runtime,
        )
        config = runtime.config
        if self._awrap_tool_call is None and self._wrap_tool_call is None:
            return await self._execute_async(request, input_type, config)

        async def execute(req: ToolCallRequest) -> Any:
            return await self._execute_async(req, input_type, config)

        def execute_sync(req: ToolCallRequest) -> Any:
            return self._execute_sync(req, input_type, config)

        try:
            if self._awrap_tool_call is not None:
                return await self._awrap_tool_call(request, execute)
            assert self._wrap_tool_call is not None
            return self._wrap_tool_call(request, execute_sync)
        except Exception as exc:
            return self._wrapper_failed(exc, request)

    def _wrapper_failed(self, exc: Exception, request: ToolCallRequest) -> ToolMessage:
        if not self._handle_tool_errors:
            raise exc
        return ToolMessage(
            content=handle_tool_error(exc, flag=self._handle_tool_errors),
            name=request.tool_call["name"],
            tool_call_id=request.tool_call["id"],
            status="error",
        )

    def _execute_sync(
        self, request: ToolCallRequest, input_type: InputType, config: RunnableConfig
    ) -> Output:
        tool, call = request.tool, request.tool_call
        if tool is None:
            return self._unknown_tool(call)
        args = {**self._inject_tool_args(call, request.runtime, tool), "type": "tool_call"}
        try:
            try:
                run = self._executable(tool)
                if _async_only(run):
                    response = unwrap(run_sync(run.ainvoke(args, config)))
                else:
                    response = unwrap(run.invoke(args, config))
            except ValidationError as exc:
                raise self._invocation_error(call, exc) from exc
            return self._normalize_tool_response(response, call, input_type)
        except Exception as exc:
            return self._tool_failed(exc, call)

    async def _execute_async(
        self, request: ToolCallRequest, input_type: InputType, config: RunnableConfig
    ) -> Output:
        tool, call = request.tool, request.tool_call
        if tool is None:
            return self._unknown_tool(call)
        args = {**self._inject_tool_args(call, request.runtime, tool), "type": "tool_call"}
        try:
            try:
                response = unwrap(await self._executable(tool).ainvoke(args, config))
            except ValidationError as exc:
                raise self._invocation_error(call, exc) from exc
            return self._normalize_tool_response(response, call, input_type)
        except Exception as exc:
            return self._tool_failed(exc, call)

    def _executable(self, tool: BaseTool) -> BaseTool:
        """The copy of ``tool`` that runs (see ``tool_commands``), made once per tool."""
        known = self._executables.get(id(tool))
        if known is None or known[0] is not tool:
            known = (tool, executable(tool))
            self._executables[id(tool)] = known
        return known[1]

    def _invocation_error(self, call: ToolCall, exc: ValidationError) -> ToolInvocationError:
        filtered = filter_validation_errors(exc, self._injected_args.get(call["name"]))
        return ToolInvocationError(call["name"], exc, call["args"], filtered)

    def _tool_failed(self, exc: Exception, call: ToolCall) -> ToolMessage:
        """An error ``ToolMessage`` for ``exc`` when ``handle_tool_errors`` covers it; else
        it propagates (LangGraph's control-flow signals always do)."""
        flag = self._handle_tool_errors
        if _is_bubble_up(exc) or not flag or not isinstance(exc, handled_types(flag)):
            raise exc
        return ToolMessage(
            content=handle_tool_error(exc, flag=flag),
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )

    def _unknown_tool(self, call: ToolCall) -> ToolMessage:
        content = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=call["name"], available_tools=", ".join(self._tools_by_name)
        )
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    # -- input and output shapes --------------------------------------------------------

    def _parse_input(self, input: Any) -> tuple[list[ToolCall], InputType]:
        if isinstance(input, list):
            if input and isinstance(input[-1], dict) and input[-1].get("type") == "tool_call":
                return cast("list[ToolCall]", input), "tool_calls"
            messages, input_type = input, "list"
        elif isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            return [input["tool_call"]], "tool_calls"
        elif messages := (
            input.get(self._messages_key, [])
            if isinstance(input, dict)
            else getattr(input, self._messages_key, [])
        ):
            input_type = "dict"
        else:
            raise ValueError("No message found in input")
        try:
            latest = next(m for m in reversed(messages) if isinstance(m, AIMessage))
        except StopIteration:
            raise ValueError("No AIMessage found in input") from None
        return list(latest.tool_calls), cast("InputType", input_type)

    def _extract_state(self, input: Any) -> Any:
        if isinstance(input, dict) and input.get("__type") == "tool_call_with_context":
            return input["state"]
        if (
            isinstance(input, list)
            and input
            and isinstance(input[-1], dict)
            and input[-1].get("type") == "tool_call"
        ):
            return {}
        return input

    def _inject_tool_args(
        self, call: ToolCall, runtime: ToolRuntime[Any, Any], tool: BaseTool | None = None
    ) -> ToolCall:
        """``call`` with the tool's hidden arguments filled in (and any the model sent
        for them dropped, so that a model cannot forge them)."""
        injected = self._injected_args.get(call["name"])
        if not injected and tool is not None:
            injected = injected_args_of(tool)  # a tool a wrap_tool_call interceptor added
        if not injected:
            return call
        values: dict[str, Any] = {}
        if injected.state:
            values.update(self._state_args(call, injected, runtime.state))
        if injected.store:
            if runtime.store is None:
                raise ValueError(
                    "Cannot inject store into tools with InjectedStore annotations - "
                    "please compile your graph with a store."
                )
            values[injected.store] = runtime.store
        if injected.runtime:
            values[injected.runtime] = runtime
        out = copy(call)
        kept = {k: v for k, v in call["args"].items() if k not in injected.all_injected_keys}
        out["args"] = {**kept, **values}
        return out

    def _state_args(self, call: ToolCall, injected: InjectedArgs, state: Any) -> dict[str, Any]:
        if isinstance(state, list):
            fields = list(injected.state.values())
            if (len(fields) == 1 and fields[0] == self._messages_key) or fields[0] is None:
                state = {self._messages_key: state}
            else:
                msg = (
                    f"Invalid input to ToolNode. Tool {call['name']} requires "
                    "graph state dict as input."
                )
                if any(fields):
                    msg += f" State should contain fields {', '.join(f for f in fields if f)}."
                raise ValueError(msg)
        values: dict[str, Any] = {}
        for arg, key in injected.state.items():
            if not key:
                values[arg] = state
            elif isinstance(state, dict):
                if key in state:
                    values[arg] = state[key]
                elif arg not in injected.optional_state_args:
                    raise KeyError(key)
            elif hasattr(state, key):
                values[arg] = getattr(state, key)
            elif arg not in injected.optional_state_args:
                raise AttributeError(key)
        return values

    def _combine_tool_outputs(self, outputs: list[Output], input_type: InputType) -> Any:
        flat: list[ToolMessage | Command[Any]] = []
        for output in outputs:
            flat.extend(output if isinstance(output, list) else [output])
        if not any(isinstance(o, Command) for o in flat):
            return flat if input_type == "list" else {self._messages_key: flat}
        combined: list[Any] = []
        parent: Command[Any] | None = None  # every PARENT Send of the call, in one command
        for o in flat:
            if not isinstance(o, Command):
                combined.append([o] if input_type == "list" else {self._messages_key: [o]})
            elif (
                o.graph is Command.PARENT
                and isinstance(o.goto, list)
                and all(isinstance(s, Send) for s in o.goto)
            ):
                goto = [*cast("list[Send]", parent.goto), *o.goto] if parent else o.goto
                parent = (
                    replace(parent, goto=goto)
                    if parent
                    else Command(graph=Command.PARENT, goto=goto)
                )
            else:
                combined.append(o)
        if parent is not None:
            combined.append(parent)
        return combined

    def _normalize_tool_response(
        self, response: Any, call: ToolCall, input_type: InputType
    ) -> Output:
        if isinstance(response, Command):
            return self._validate_tool_command(response, call, input_type)
        if isinstance(response, ToolMessage):
            response.content = msg_content_output(response.content)  # type: ignore[assignment]
            return response
        if isinstance(response, list):
            if all(isinstance(r, Command | ToolMessage) for r in response):
                return self._validate_tool_command_list(response, call, input_type)
            raise TypeError(
                f"Tool {call['name']} returned a list with invalid element "
                "types: expected all Command or ToolMessage"
            )
        raise TypeError(f"Tool {call['name']} returned unexpected type: {type(response)}")

    def _validate_tool_command_list(
        self, response: list[Any], call: ToolCall, input_type: InputType
    ) -> list[ToolMessage | Command[Any]]:
        """A tool's list of Commands and ToolMessages: exactly one ToolMessage answers the
        call, at the top level or in a Command's update."""
        expected = call["id"]
        count = 0
        for item in response:
            if isinstance(item, ToolMessage):
                count += item.tool_call_id == expected
            elif isinstance(item, Command) and isinstance(item.update, dict):
                for m in item.update.get(self._messages_key, []):
                    count += isinstance(m, ToolMessage) and m.tool_call_id == expected
        if count != 1:
            raise ValueError(
                f"Tool {call['name']} returned a list with {count} messages bound to "
                f"tool_call_id {expected!r}; expected exactly one terminating ToolMessage."
            )
        out: list[ToolMessage | Command[Any]] = []
        for item in response:
            if isinstance(item, Command):
                out.append(
                    self._validate_tool_command(item, call, input_type, require_terminator=False)
                )
            else:
                item.content = msg_content_output(item.content)
                out.append(item)
        return out

    def _validate_tool_command(
        self,
        command: Command[Any],
        call: ToolCall,
        input_type: InputType,
        *,
        require_terminator: bool = True,
    ) -> Command[Any]:
        if isinstance(command.update, dict):
            if input_type not in ("dict", "tool_calls"):
                raise ValueError(
                    "Tools can provide a dict in Command.update only when using dict "
                    f"with '{self._messages_key}' key as ToolNode input, "
                    f"got: {command.update} for tool '{call['name']}'"
                )
            updated = deepcopy(command)
            messages = cast("dict[str, Any]", updated.update or {}).get(self._messages_key, [])
        elif isinstance(command.update, list):
            if input_type != "list":
                raise ValueError(
                    "Tools can provide a list of messages in Command.update "
                    "only when using list of messages as ToolNode input, "
                    f"got: {command.update} for tool '{call['name']}'"
                )
            updated = deepcopy(command)
            messages = updated.update
        else:
            return command
        messages = convert_to_messages(messages)
        if messages == [RemoveMessage(id=REMOVE_ALL_MESSAGES)]:
            return updated
        matched = False
        for m in messages:
            if isinstance(m, ToolMessage) and m.tool_call_id == call["id"]:
                m.name = call["name"]
                matched = True
        if require_terminator and updated.graph is None and not matched:
            example = (
                '`Command(update={"messages": '
                '[ToolMessage("Success", tool_call_id=tool_call_id), ...]}, ...)`'
                if input_type == "dict"
                else "`Command(update="
                '[ToolMessage("Success", tool_call_id=tool_call_id), ...], ...)`'
            )
            raise ValueError(
                "Expected to have a matching ToolMessage in Command.update "
                f"for tool '{call['name']}', got: {messages}. "
                "Every tool call (LLM requesting to call a tool) "
                "in the message history MUST have a corresponding ToolMessage. "
                f"You can fix it by modifying the tool to return {example}."
            )
        return updated


def tools_condition(
    state: list[AnyMessage] | dict[str, Any] | BaseModel, messages_key: str = "messages"
) -> Literal["tools", "__end__"]:
    """``"tools"`` when the last message asks for tool calls, else END."""
    if isinstance(state, list):
        last = state[-1]
    elif (isinstance(state, dict) and (messages := state.get(messages_key, []))) or (
        messages := getattr(state, messages_key, [])
    ):
        last = messages[-1]
    else:
        raise ValueError(f"No messages found in input state to tool_edge: {state}")
    return "tools" if getattr(last, "tool_calls", None) else "__end__"


def _node_runtime(config: Mapping[str, Any]) -> Any:
    """The runtime of the node this call runs in: LangGraph's config key when a caller set
    it, else the running wayline node's, else an empty one (called outside a graph)."""
    given = (config.get("configurable") or {}).get(_RUNTIME_KEY)
    if given is not None:
        return given
    from wayline.graph.context import _SCOPE
    from wayline.runtime import Runtime, get_runtime

    scope = _SCOPE.get(None)
    if scope is not None and (scope.loop is not None or scope.runtime is not None):
        return get_runtime()
    return Runtime()


def _async_only(tool: BaseTool) -> bool:
    """A tool with a coroutine and no function (its sync ``invoke`` refuses)."""
    return getattr(tool, "func", 0) is None and getattr(tool, "coroutine", None) is not None


def _is_bubble_up(exc: BaseException) -> bool:
    """LangGraph's ``GraphBubbleUp`` (interrupts, parent commands) always propagates."""
    import wayline.errors

    bubble = getattr(wayline.errors, "GraphBubbleUp", None)
    return isinstance(bubble, type) and isinstance(exc, bubble)
