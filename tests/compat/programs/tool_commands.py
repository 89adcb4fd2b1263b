"""Tools that return a Command: a state update beside the ToolMessage, a tool whose
Command routes the graph (goto), and a handoff from a tool inside a subgraph to a node of
the parent (Command(graph=Command.PARENT)); each applied, not turned into a string."""

from typing import Annotated

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command


class State(MessagesState):
    user_name: str
    handled_by: str


@tool
def remember_name(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Remember the user's name."""
    return Command(
        update={
            "user_name": name,
            "messages": [ToolMessage(f"saved {name}", tool_call_id=tool_call_id)],
        }
    )


@tool
def escalate(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the conversation to a human (a node of the graph that runs this one)."""
    return Command(
        graph=Command.PARENT,
        goto="human",
        update={"messages": [ToolMessage("escalated", tool_call_id=tool_call_id)]},
    )


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def ask(*calls):
    return AIMessage(
        "",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)],
    )


def main(checkpointer):
    seen = []
    # 1. an update beside a plain tool's answer, in one ToolNode step
    builder = StateGraph(State)
    builder.add_node("tools", ToolNode([remember_name, add]))
    builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "commands"}}
    start = [
        HumanMessage("I am Ada"),
        ask(("remember_name", {"name": "Ada"}), ("add", {"a": 2, "b": 3})),
    ]
    out = graph.invoke({"messages": start}, config)
    seen.append(out["user_name"])
    seen.append([(m.type, m.content) for m in out["messages"]])
    seen.append(graph.get_state(config).values["user_name"])

    # 2. a handoff: the tool runs in a subgraph, its Command goes to the parent's "human"
    def agent(state: State):
        return {"messages": [ask(("escalate", {}))]}

    inner = StateGraph(State)
    inner.add_node("agent", agent)
    inner.add_node("tools", ToolNode([escalate]))
    inner.add_edge(START, "agent")
    inner.add_edge("agent", "tools")

    def human(state: State):
        return {"handled_by": "human", "messages": [AIMessage("a human here")]}

    outer = StateGraph(State)
    outer.add_node("assistant", inner.compile())
    outer.add_node("human", human)
    outer.add_edge(START, "assistant")
    parent = outer.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "handoff"}}
    for chunk in parent.stream({"messages": [HumanMessage("help")]}, config, stream_mode="updates"):
        seen.append(sorted(chunk))
    final = parent.get_state(config)
    seen.append(final.values["handled_by"])
    seen.append([(m.type, m.content) for m in final.values["messages"]])
    return seen
