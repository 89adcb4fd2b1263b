"""``create_react_agent``: LangGraph's prebuilt tool-calling agent (a model node and a
``ToolNode`` in a loop), at LangGraph's path ``langgraph.prebuilt.chat_agent_executor``.

The model is a chat model (tools bound unless already bound), a ``"provider:model"``
string, or a callable of ``(state, runtime)`` that picks one per call. ``prompt``,
``pre_model_hook``, ``post_model_hook`` and ``response_format`` are LangGraph's, and so is
the graph: ``version="v2"`` sends each tool call to the tools node as a task of its own.

Mirrors ``langgraph.prebuilt.chat_agent_executor`` (MIT, LangChain Inc.).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypeVar, cast, get_type_hints

from langchain_core.language_models import BaseChatModel, LanguageModelLike
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableLambda, RunnableSequence
from langchain_core.tools import BaseTool
from pydantic import BaseModel
from typing_extensions import TypedDict, deprecated

from wayline.codec import Codec
from wayline.errors import CodecError
from wayline.graph.builder import StateGraph
from wayline.graph.compiled import CompiledGraph
from wayline.graph.message import add_messages
from wayline.graph.types import END, Send
from wayline.prebuilt._sync import run_sync
from wayline.prebuilt.tool_node import ToolCallWithContext, ToolNode

try:  # LangGraph's managed value, where wayline provides it
    from wayline.managed import RemainingSteps  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # the key is then an ordinary one, absent unless a node writes it
    RemainingSteps = int  # type: ignore[misc,unused-ignore]

__all__ = [
    "AgentState",
    "AgentStatePydantic",
    "AgentStateWithStructuredResponse",
    "AgentStateWithStructuredResponsePydantic",
    "create_react_agent",
    "create_tool_calling_executor",
]

StructuredResponse = dict | BaseModel  # type: ignore[type-arg]
StructuredResponseSchema = dict | type[BaseModel]  # type: ignore[type-arg]
PROMPT_RUNNABLE_NAME = "Prompt"


# LangGraph 1.0 deprecated these for ``langchain.agents``' (``category=None``: marked, as
# LangGraph's, for type checkers and in the JSON schemas a graph publishes, ``"deprecated":
# true``, with no warning at run time: wayline's create_react_agent uses them itself).
_MOVED = "{} has been deprecated in LangGraph 1.0 in favor of AgentState in `langchain.agents`"


@deprecated(_MOVED.format("AgentState"), category=None)
class AgentState(TypedDict):
    """The state of the agent."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    remaining_steps: NotRequired[RemainingSteps]


@deprecated(_MOVED.format("AgentStatePydantic"), category=None)
class AgentStatePydantic(BaseModel):
    """The state of the agent."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    remaining_steps: RemainingSteps = 25


@deprecated(_MOVED.format("AgentStateWithStructuredResponse"), category=None)
class AgentStateWithStructuredResponse(AgentState):
    """The state of the agent with a structured response."""

    structured_response: StructuredResponse


@deprecated(_MOVED.format("AgentStateWithStructuredResponsePydantic"), category=None)
class AgentStateWithStructuredResponsePydantic(AgentStatePydantic):
    """The state of the agent with a structured response."""

    structured_response: StructuredResponse


StateSchema = TypeVar("StateSchema", bound=AgentState | AgentStatePydantic)


def _get_state_value(state: Any, key: str, default: Any = None) -> Any:
    return state.get(key, default) if isinstance(state, dict) else getattr(state, key, default)


def _get_prompt_runnable(prompt: Any) -> Runnable[Any, Any]:
    """``prompt`` (None, a string, a ``SystemMessage``, a function of the state, sync or
    async, or a Runnable) as a Runnable from the state to the model's input."""
    if prompt is None:
        return RunnableLambda(
            lambda state: _get_state_value(state, "messages"), name=PROMPT_RUNNABLE_NAME
        )
    if isinstance(prompt, str | SystemMessage):
        system = SystemMessage(content=prompt) if isinstance(prompt, str) else prompt
        return RunnableLambda(
            lambda state: [system, *_get_state_value(state, "messages")],
            name=PROMPT_RUNNABLE_NAME,
        )
    if isinstance(prompt, Runnable):
        return prompt
    if callable(prompt):
        return _prompt_callable(prompt)
    raise ValueError(f"Got unexpected type for `prompt`: {type(prompt)}")


def _prompt_callable(prompt: Callable[..., Any]) -> Runnable[Any, Any]:
    """A prompt function as a Runnable that also gets what it asks for, as LangGraph's
    ``RunnableCallable`` gives it: ``config``, ``store`` (the graph's memory store) and
    ``runtime``."""
    params = inspect.signature(prompt).parameters

    def extra(config: Any) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if "config" in params:
            kwargs["config"] = config
        if "store" in params or "runtime" in params:
            runtime = _current_runtime()
            if "store" in params:
                kwargs["store"] = getattr(runtime, "store", None)
            if "runtime" in params:
                kwargs["runtime"] = runtime
        return kwargs

    if inspect.iscoroutinefunction(prompt):

        async def acall(state: Any, config: Any) -> Any:
            return await prompt(state, **extra(config))

        return RunnableLambda(acall, name=PROMPT_RUNNABLE_NAME)

    def call(state: Any, config: Any) -> Any:
        return prompt(state, **extra(config))

    return RunnableLambda(call, name=PROMPT_RUNNABLE_NAME)


def _current_runtime() -> Any:
    """The running node's ``Runtime`` (None outside a graph)."""
    from wayline.errors import WaylineError
    from wayline.runtime import get_runtime

    try:
        return get_runtime()
    except WaylineError:
        return None


def _should_bind_tools(model: Any, tools: Sequence[BaseTool], num_builtin: int = 0) -> bool:
    """Whether ``model`` still needs ``bind_tools``; ``ValueError`` when it was bound to
    other tools than the agent's."""
    if isinstance(model, RunnableSequence):
        model = next(
            (s for s in model.steps if isinstance(s, RunnableBinding | BaseChatModel)), model
        )
    if not isinstance(model, RunnableBinding) or "tools" not in model.kwargs:
        return True
    bound_tools = model.kwargs["tools"]
    if len(tools) != len(bound_tools) - num_builtin:
        raise ValueError(
            "Number of tools in the model.bind_tools() and tools passed to "
            "create_react_agent must match"
            f" Got {len(tools)} tools, expected {len(bound_tools) - num_builtin}"
        )
    bound_names = set()
    for bound in bound_tools:
        if bound.get("type") == "function":
            bound_names.add(bound["function"]["name"])
        elif bound.get("name"):
            bound_names.add(bound["name"])
    if missing := {t.name for t in tools} - bound_names:
        raise ValueError(f"Missing tools '{missing}' in the model.bind_tools()")
    return False


def _get_model(model: Any) -> BaseChatModel:
    """The chat model inside ``model`` (a binding or a prompt | model sequence)."""
    if isinstance(model, RunnableSequence):
        model = next(
            (s for s in model.steps if isinstance(s, RunnableBinding | BaseChatModel)), model
        )
    if isinstance(model, RunnableBinding):
        model = model.bound
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            "Expected `model` to be a ChatModel or RunnableBinding (e.g. "
            f"model.bind_tools(...)), got {type(model)}"
        )
    return model


def _validate_chat_history(messages: Sequence[BaseMessage]) -> None:
    """``ValueError`` when an AI message's tool call has no ``ToolMessage`` answer."""
    calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    missing = [c for c in calls if c["id"] not in answered]
    if not missing:
        return
    raise ValueError(
        "Found AIMessages with tool_calls that do not have a corresponding ToolMessage. "
        f"Here are the first few of those tool calls: {missing[:3]}.\n\n"
        "Every tool call (LLM requesting to call a tool) in the message history MUST have "
        "a corresponding ToolMessage (result of a tool invocation to return to the LLM) - "
        "this is required by most LLM providers.\n"
        "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/"
        "errors/INVALID_CHAT_HISTORY"
    )


def _register_response_type(codec: Codec, response_format: Any) -> None:
    """The structured response is stored in the state, typed by ``response_format`` rather
    than by the state schema: register it with the graph's codec as the schema's types are.
    A class of a name already taken (a function's local class, defined again) is
    registered under a name of its own."""
    schema = response_format[1] if isinstance(response_format, tuple) else response_format
    registrable = dataclasses.is_dataclass(schema) or hasattr(schema, "model_fields")
    if not isinstance(schema, type) or not registrable or codec.is_registered(schema):
        return
    try:
        codec.register(schema)
    except CodecError:
        codec.register(schema, f"{schema.__module__}.{schema.__qualname__}@{id(schema):x}")


class _AgentNode:
    """A model-calling node (``func`` is its function, as LangGraph's ``RunnableCallable``
    names it): called with the state and config, it reads the runtime of the run."""

    def __init__(self, func: Callable[[Any, Any, Any], Any], name: str) -> None:
        self.func = func
        self.__name__ = name

    def __call__(self, state: Any, config: Any) -> Any:
        from wayline.runtime import get_runtime

        return self.func(state, get_runtime(), config)


def create_react_agent(
    model: str | LanguageModelLike | Callable[..., Any],
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: Any = None,
    response_format: StructuredResponseSchema | tuple[str, StructuredResponseSchema] | None = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: type | None = None,
    context_schema: type | None = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
    **deprecated_kwargs: Any,
) -> CompiledGraph:
    """A graph that calls the model, runs the tools it asks for, and loops until the model
    answers without tool calls (see the module docstring)."""
    if (config_schema := deprecated_kwargs.pop("config_schema", None)) is not None:
        context_schema = context_schema or config_schema
    if deprecated_kwargs:
        raise TypeError(
            f"create_react_agent() got unexpected keyword arguments: {deprecated_kwargs}"
        )
    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    if state_schema is not None:
        required = {"messages", "remaining_steps"}
        if response_format is not None:
            required.add("structured_response")
        if missing := required - set(get_type_hints(state_schema)):
            raise ValueError(f"Missing required key(s) {missing} in state_schema")
    if state_schema is None:
        state_schema = (
            AgentStateWithStructuredResponse if response_format is not None else AgentState
        )
    builtin: list[dict[str, Any]] = []
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        builtin = [t for t in tools if isinstance(t, dict)]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    tool_classes = list(tool_node.tools_by_name.values())

    is_dynamic = not isinstance(model, str | Runnable) and callable(model)
    is_async_dynamic = is_dynamic and inspect.iscoroutinefunction(model)
    is_async_prompt = inspect.iscoroutinefunction(prompt)
    static_model: Any = None
    if not is_dynamic:
        if isinstance(model, str):
            try:
                from langchain.chat_models import init_chat_model  # type: ignore[import-not-found]
            except ImportError:
                raise ImportError(
                    "Please install langchain (`pip install langchain`) to "
                    "use '<provider>:<model>' string syntax for `model` parameter."
                ) from None
            model = init_chat_model(model)
        if _should_bind_tools(model, tool_classes, len(builtin)) and tool_classes + builtin:
            model = cast("BaseChatModel", model).bind_tools([*tool_classes, *builtin])
        static_model = _get_prompt_runnable(prompt) | model  # type: ignore[operator]
    return_direct = {t.name for t in tool_classes if t.return_direct}

    def resolve(state: Any, runtime: Any) -> Any:
        if not is_dynamic:
            return static_model
        chosen = model(state, runtime)  # type: ignore[operator]
        if inspect.isawaitable(chosen):
            chosen = run_sync(chosen)
        return _get_prompt_runnable(prompt) | chosen

    def run(runnable: Any, value: Any, config: Any) -> Any:
        if is_async_prompt or is_async_dynamic:
            return run_sync(runnable.ainvoke(value, config))
        return runnable.invoke(value, config)

    def more_steps_needed(state: Any, response: BaseMessage) -> bool:
        calls = response.tool_calls if isinstance(response, AIMessage) else []
        all_direct = isinstance(response, AIMessage) and all(
            c["name"] in return_direct for c in calls
        )
        remaining = _get_state_value(state, "remaining_steps", None)
        if remaining is None:
            return False
        return bool((remaining < 1 and all_direct) or (remaining < 2 and calls))

    def model_input(state: Any) -> Any:
        messages = _get_state_value(state, "messages")
        if pre_model_hook is not None:
            messages = _get_state_value(state, "llm_input_messages") or messages
            error = (
                "Expected input to call_model to have 'llm_input_messages' or 'messages' "
                f"key, but got {state}"
            )
        else:
            error = f"Expected input to call_model to have 'messages' key, but got {state}"
        if messages is None:
            raise ValueError(error)
        _validate_chat_history(messages)
        if isinstance(state, BaseModel):
            state.messages = messages  # type: ignore[attr-defined]
        else:
            state["messages"] = messages
        return state

    def call_model(state: Any, runtime: Any, config: Any) -> dict[str, Any]:
        response = cast("AIMessage", run(resolve(state, runtime), model_input(state), config))
        response.name = name
        if more_steps_needed(state, response):
            response = AIMessage(
                id=response.id, content="Sorry, need more steps to process this request."
            )
        return {"messages": [response]}

    def generate_structured_response(state: Any, runtime: Any, config: Any) -> dict[str, Any]:
        messages = _get_state_value(state, "messages")
        schema = response_format
        if isinstance(response_format, tuple):
            system_prompt, schema = response_format
            messages = [SystemMessage(content=system_prompt), *messages]
        structured = _get_model(resolve(state, runtime)).with_structured_output(cast("Any", schema))
        return {"structured_response": run(structured, messages, config)}

    input_schema: type = state_schema
    if pre_model_hook is not None:
        if issubclass(state_schema, BaseModel):
            from pydantic import create_model

            input_schema = create_model(
                "CallModelInputSchema",
                llm_input_messages=(list[AnyMessage], ...),
                __base__=state_schema,
            )
        else:

            class CallModelInputSchema(state_schema):  # type: ignore[misc,valid-type]
                llm_input_messages: list[AnyMessage]

            input_schema = CallModelInputSchema

    workflow = StateGraph(state_schema, context_schema)
    state_keys = tuple(workflow.schema.channels)
    if response_format is not None:
        _register_response_type(workflow.codec, response_format)
    workflow.add_node("agent", _AgentNode(call_model, "agent"), input_schema=input_schema)
    entrypoint = "agent"
    if pre_model_hook is not None:
        workflow.add_node("pre_model_hook", pre_model_hook)
        workflow.add_edge("pre_model_hook", "agent")
        entrypoint = "pre_model_hook"
    workflow.set_entry_point(entrypoint)
    if post_model_hook is not None:
        workflow.add_node("post_model_hook", post_model_hook)
    if response_format is not None:
        workflow.add_node(
            "generate_structured_response",
            _AgentNode(generate_structured_response, "generate_structured_response"),
        )

    def compiled() -> CompiledGraph:
        if tuple(workflow.schema.channels) != state_keys:
            workflow.output_keys = state_keys  # a hook's llm_input_messages is not output
        return workflow.compile(
            checkpointer,
            store=store,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            debug=debug,
            name=name,
        )

    if not tool_classes:
        last = "agent"
        if post_model_hook is not None:
            workflow.add_edge("agent", "post_model_hook")
            last = "post_model_hook"
        if response_format is not None:
            workflow.add_edge(last, "generate_structured_response")
        return compiled()

    def sends(state: Any, calls: list[Any]) -> list[Send]:
        return [
            Send(
                "tools",
                ToolCallWithContext(
                    __type="tool_call_with_context",
                    tool_call=call,
                    state=state,
                ),
            )
            for call in calls
        ]

    def should_continue(state: Any) -> str | list[Send]:
        last = _get_state_value(state, "messages")[-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            if post_model_hook is not None:
                return "post_model_hook"
            return "generate_structured_response" if response_format is not None else END
        if version == "v1":
            return "tools"
        if post_model_hook is not None:
            return "post_model_hook"
        return sends(state, last.tool_calls)

    workflow.add_node("tools", tool_node)
    agent_paths: list[str] = []
    post_paths = [entrypoint, "tools"]
    if post_model_hook is not None:
        agent_paths.append("post_model_hook")
        workflow.add_edge("agent", "post_model_hook")
    else:
        agent_paths.append("tools")
    if response_format is not None:
        (post_paths if post_model_hook is not None else agent_paths).append(
            "generate_structured_response"
        )
    else:
        (post_paths if post_model_hook is not None else agent_paths).append(END)

    if post_model_hook is not None:

        def post_model_hook_router(state: Any) -> str | list[Send]:
            messages = _get_state_value(state, "messages")
            answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            last_ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
            pending = [c for c in last_ai.tool_calls if c["id"] not in answered]
            if pending:
                return sends(state, pending)
            if isinstance(messages[-1], ToolMessage):
                return entrypoint
            return "generate_structured_response" if response_format is not None else END

        workflow.add_conditional_edges("post_model_hook", post_model_hook_router, post_paths)
    workflow.add_conditional_edges("agent", should_continue, agent_paths)

    def route_tool_responses(state: Any) -> str:
        m: Any = None
        for m in reversed(_get_state_value(state, "messages")):
            if not isinstance(m, ToolMessage):
                break
            if m.name in return_direct:
                return END
        if isinstance(m, AIMessage) and any(c["name"] in return_direct for c in m.tool_calls):
            return END
        return entrypoint

    if return_direct:
        workflow.add_conditional_edges("tools", route_tool_responses, [entrypoint, END])
    else:
        workflow.add_edge("tools", entrypoint)
    return compiled()


create_tool_calling_executor = create_react_agent
