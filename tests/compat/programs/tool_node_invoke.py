"""ToolNode called by itself, as a Runnable: on a state dict, a list of messages and a
list of tool calls; the default error handling (invalid arguments answered, other errors
raised), handle_tool_errors as True, a string, a handler and False; an unknown tool; and
ainvoke with an async tool. Outside a graph LangGraph's ToolNode reads its runtime from
the config, as LangGraph's own tests give it."""

import asyncio

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

CONFIG = {"configurable": {"__pregel_runtime": Runtime()}}


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


@tool
async def shout(text: str) -> str:
    """Upper-case text."""
    return text.upper()


def call(name, args, id="1"):
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def ai(*calls):
    return AIMessage("", tool_calls=list(calls))


def shown(result):
    messages = result["messages"] if isinstance(result, dict) else result
    return [(m.type, m.name, m.tool_call_id, m.content, m.status) for m in messages]


def main(checkpointer):
    seen = []
    node = ToolNode([divide])
    seen.append(shown(node.invoke({"messages": [ai(call("divide", {"a": 6, "b": 3}))]}, CONFIG)))
    seen.append(shown(node.invoke([ai(call("divide", {"a": 1, "b": 4}))], CONFIG)))
    seen.append(
        shown(
            node.invoke(
                [call("divide", {"a": 9, "b": 3}), call("divide", {"a": 1, "b": 1}, "2")], CONFIG
            )
        )
    )
    seen.append(shown(node.invoke({"messages": [ai(call("divide", {"a": "x", "b": 1}))]}, CONFIG)))
    seen.append(shown(node.invoke({"messages": [ai(call("nope", {}))]}, CONFIG)))
    try:
        node.invoke({"messages": [ai(call("divide", {"a": 1, "b": 0}))]}, CONFIG)
    except ZeroDivisionError as exc:
        seen.append(("raised", type(exc).__name__))
    zero = {"messages": [ai(call("divide", {"a": 1, "b": 0}))]}
    for handle in (True, "try another divisor", lambda e: f"handled {type(e).__name__}"):
        seen.append(shown(ToolNode([divide], handle_tool_errors=handle).invoke(zero, CONFIG)))
    try:
        ToolNode([divide], handle_tool_errors=False).invoke(
            {"messages": [ai(call("divide", {"a": "x", "b": 1}))]}, CONFIG
        )
    except Exception as exc:
        seen.append(("raised", type(exc).__name__))
    shouting = ToolNode([shout], name="loud", messages_key="chat")
    seen.append(
        shown(
            asyncio.run(shouting.ainvoke({"chat": [ai(call("shout", {"text": "hi"}))]}, CONFIG))[
                "chat"
            ]
        )
    )
    seen.append((shouting.name, sorted(shouting.tools_by_name)))
    return seen
