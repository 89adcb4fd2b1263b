"""The tool-calling agent: a fake chat model asks for tools, ToolNode runs them,
tools_condition loops until the model answers."""

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return {"paris": "sunny", "oslo": "snow"}[city]


def scripted(streams=True):
    if not streams:  # a model that answers whole messages (tool calls survive streaming)
        return FakeMessagesListChatModel(responses=SCRIPT)
    return GenericFakeChatModel(messages=iter(SCRIPT))


SCRIPT = [
    AIMessage(
        "let me check",
        tool_calls=[
            {"name": "multiply", "args": {"a": 6, "b": 7}, "id": "c1"},
            {"name": "lookup", "args": {"city": "oslo"}, "id": "c2"},
        ],
    ),
    AIMessage("hmm", tool_calls=[{"name": "nope", "args": {}, "id": "c3"}]),
    AIMessage("again", tool_calls=[{"name": "multiply", "args": {"a": "x"}, "id": "c4"}]),
    AIMessage("42, and snow in Oslo."),
]


def main(checkpointer):
    llm = scripted()

    def agent(state: MessagesState):
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([multiply, lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "agent"}}
    seen = []
    for chunk in graph.stream({"messages": [HumanMessage("6*7? weather in oslo?")]}, config):
        seen.append(chunk)
    final = graph.get_state(config)
    seen.append([m.type for m in final.values["messages"]])
    seen.append(final.values["messages"][-1].content)
    seen.append(tools_condition(final.values))
    llm = scripted(streams=False)  # the same conversation again, streaming messages
    config = {"configurable": {"thread_id": "agent-2"}}
    for message, meta in graph.stream(
        {"messages": [HumanMessage("6*7? weather in oslo?")]}, config, stream_mode="messages"
    ):
        seen.append((message.type, message.content, meta["langgraph_node"]))
    return seen
