"""Messages and agents the way LangGraph's prebuilt tests use them: add_messages gives the
caller's own input message its id; a pydantic state whose messages are an
Annotated[Sequence[BaseMessage], add_messages] takes ("user", ...) tuples and dicts (folded
by the reducer before the first node); an agent streamed inside a node is that node's
subgraph (its messages in the parent's stream(subgraphs=True), none without); the same with
astream in an async node; a GraphBubbleUp raised by a tool is never turned into an error
message by ToolNode; the metadata of messages a node returns (sync and async, and a Send's
task: triggers ("__pregel_push",)), with the configurable keys LangGraph propagates;
add_messages(format="langchain-openai"); a Runnable that is not a function (a chat model, a
RunnableLambda) as a node."""

import asyncio
from collections.abc import Sequence
from typing import Annotated
from unittest.mock import Mock

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.errors import GraphBubbleUp
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.types import Command, Send
from pydantic import BaseModel
from typing_extensions import TypedDict


class Scripted(FakeMessagesListChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


@tool
def get_weather(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


@tool
def bubble(x: int) -> str:
    """Raises a signal that must reach the graph."""
    raise GraphBubbleUp("up")


class Chat(BaseModel):
    messages: Annotated[Sequence[BaseMessage], add_messages]
    user: str = "?"


def model():
    call = {"name": "get_weather", "args": {"city": "Tokyo"}, "id": "1"}
    return Scripted(responses=[AIMessage("calling", tool_calls=[call]), AIMessage("done")])


def shape(events):
    return [(len(ns), ns[0].split(":")[0], type(m).__name__, m.content) for ns, (m, _) in events]


def main(checkpointer):
    seen = []
    # 1. the input message object gets the id its state gave it
    builder = StateGraph(MessagesState)
    builder.add_node("echo", lambda s: {"messages": [AIMessage("echo", id="a1")]})
    builder.add_edge(START, "echo")
    graph = builder.compile(checkpointer=checkpointer)
    given = [HumanMessage("hi")]
    out = graph.invoke({"messages": given}, {"configurable": {"thread_id": "ids"}})
    seen.append([given[0].id is not None, out["messages"][0].id == given[0].id])
    seen.append(out["messages"] == [*given, AIMessage("echo", id="a1")])

    # 2. a pydantic state with a Sequence of messages folds tuples and dicts first
    def read(state: Chat):
        return {"user": f"{state.messages[0].type}/{state.messages[1].type}"}

    builder = StateGraph(Chat)
    builder.add_node("read", read)
    builder.add_edge(START, "read")
    chat = builder.compile()
    out = chat.invoke({"messages": [("user", "a"), {"role": "assistant", "content": "b"}]})
    seen.append([out["user"], [m.type for m in out["messages"]]])

    # 3. an agent streamed inside a node
    agent = None

    def run_agent(state, config):
        text = "".join(
            m.content
            for m, _ in agent.stream({"messages": [("user", "go")]}, config, stream_mode="messages")
        )
        return {"messages": [("assistant", text)]}

    builder = StateGraph(MessagesState)
    builder.add_node("outer", run_agent)
    builder.add_edge(START, "outer")
    outer = builder.compile()
    for subgraphs in (False, True):
        agent = create_react_agent(model(), [get_weather])
        events = list(
            outer.stream({"messages": [("user", "x")]}, stream_mode="messages", subgraphs=subgraphs)
        )
        seen.append(shape(events) if subgraphs else len(events))
    agent = create_react_agent(model(), [get_weather])
    seen.append(outer.invoke({"messages": [("user", "x")]})["messages"][-1].content)

    # 4. the same with astream in an async node
    async def arun_agent(state, config):
        text = ""
        async for m, _ in agent.astream(
            {"messages": [("user", "go")]}, config, stream_mode="messages"
        ):
            text += m.content
        return {"messages": [("assistant", text)]}

    builder = StateGraph(MessagesState)
    builder.add_node("outer", arun_agent)
    builder.add_edge(START, "outer")
    aouter = builder.compile()

    async def collect():
        return [
            e
            async for e in aouter.astream(
                {"messages": [("user", "x")]}, stream_mode="messages", subgraphs=True
            )
        ]

    agent = create_react_agent(model(), [get_weather])
    seen.append(shape(asyncio.run(collect())))

    # 5. a signal from a tool passes through ToolNode whatever handle_tool_errors says
    call = AIMessage("", tool_calls=[{"name": "bubble", "args": {"x": 1}, "id": "b"}])
    # outside a graph LangGraph's ToolNode reads its runtime from the config (its tests' way)
    runtime = Mock(store=None, context=None, stream_writer=lambda *a, **k: None)
    for handling in (True, "handled", False):
        try:
            node = ToolNode([bubble], handle_tool_errors=handling)
            node.invoke({"messages": [call]}, {"configurable": {"__pregel_runtime": runtime}})
            seen.append("no signal")
        except GraphBubbleUp:
            seen.append("bubbled")

    # 6. metadata of a message a node returns, with propagated configurable keys
    async def anode(state):
        return Command(update={"messages": HumanMessage("bar")})

    def meta(m, md):
        return [m.content, {k: v.split(":")[0] if k.endswith("_ns") else v for k, v in md.items()}]

    def two_nodes(second):
        builder = StateGraph(MessagesState)
        builder.add_node("plain", lambda s: {"messages": HumanMessage("foo")})
        builder.add_node("second", second)
        builder.add_edge(START, "plain")
        builder.add_edge("plain", "second")
        return builder.compile()

    config = {"configurable": {"run_id": "r-1", "graph_id": "g", "api_key": "secret"}}
    agraph = two_nodes(anode)

    async def astreamed():
        chunks = agraph.astream({"messages": []}, config, stream_mode="messages")
        return [meta(*c) async for c in chunks]

    seen.append(asyncio.run(astreamed()))
    sgraph = two_nodes(lambda s: [Command(update={"messages": HumanMessage("baz")})])
    seen.append([meta(*c) for c in sgraph.stream({"messages": []}, stream_mode="messages")])
    # ... and of one a Send's task returns: its triggers and path are a push's
    builder = StateGraph(MessagesState)
    builder.add_node("sent", lambda s: {"messages": HumanMessage("qux", id="q1")})
    builder.add_conditional_edges(START, lambda s: [Send("sent", s)])
    pgraph = builder.compile()
    seen.append([meta(*c) for c in pgraph.stream({"messages": []}, stream_mode="messages")])

    # 7. add_messages(format="langchain-openai") formats the merged history
    class OpenAIState(TypedDict):
        messages: Annotated[list, add_messages(format="langchain-openai")]

    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
    builder = StateGraph(OpenAIState)
    builder.add_node(
        "pic", lambda s: {"messages": [HumanMessage([{"type": "text", "text": "see"}, image])]}
    )
    builder.add_edge(START, "pic")
    out = builder.compile().invoke({"messages": [("user", "hi")]})
    seen.append([(m.type, m.content) for m in out["messages"]])

    # 8. a Runnable that is not a function as a node (a chat model, a RunnableLambda)
    builder = StateGraph(Annotated[list, add_messages])
    builder.add_node("model", Scripted(responses=[AIMessage("from the model")]))
    builder.add_node("lam", RunnableLambda(lambda ms: [AIMessage(f"{len(ms)} so far")]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "lam")
    seen.append(builder.compile().invoke([HumanMessage("hi")]))
    return seen
