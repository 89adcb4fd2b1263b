"""Streaming: values, updates, custom (get_stream_writer), messages (chat-model tokens via
langchain-core callbacks, with the node in the metadata), tasks, debug, a list of modes,
and the default mode."""

import itertools
import operator
from typing import Annotated

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph


class State(MessagesState):
    log: Annotated[list, operator.add]


def main(checkpointer):
    llm = GenericFakeChatModel(messages=itertools.cycle([AIMessage("one two three")]))

    def plan(state: State):
        writer = get_stream_writer()
        writer({"progress": "planning"})
        writer("half way")
        return {"log": ["plan"]}

    def talk(state: State):
        return {"messages": [llm.invoke(state["messages"])], "log": ["talk"]}

    def quiet(state: State):
        return {}

    b = StateGraph(State)
    b.add_node("plan", plan)
    b.add_node("talk", talk)
    b.add_node("quiet", quiet)
    b.add_edge(START, "plan")
    b.add_edge("plan", "talk")
    b.add_edge("talk", "quiet")
    b.add_edge("quiet", END)
    graph = b.compile(checkpointer=checkpointer)
    seen = []
    start = {"messages": [("user", "count")], "log": []}
    seen.append(list(graph.stream(start, {"configurable": {"thread_id": "d"}})))
    seen.append(
        list(graph.stream(start, {"configurable": {"thread_id": "v"}}, stream_mode="values"))
    )
    seen.append(
        list(graph.stream(start, {"configurable": {"thread_id": "c"}}, stream_mode="custom"))
    )
    tokens = []
    for chunk, meta in graph.stream(
        start, {"configurable": {"thread_id": "m"}}, stream_mode="messages"
    ):
        tokens.append((chunk.content, meta["langgraph_node"]))
    seen.append(tokens)
    both = graph.stream(
        start, {"configurable": {"thread_id": "l"}}, stream_mode=["updates", "custom"]
    )
    seen.append([(mode, chunk) for mode, chunk in both])
    tasks = graph.stream(start, {"configurable": {"thread_id": "t"}}, stream_mode="tasks")
    seen.append([(t["name"], t.get("result"), "input" in t) for t in tasks])
    debug = graph.stream(start, {"configurable": {"thread_id": "g"}}, stream_mode="debug")
    seen.append([e["type"] for e in debug if e["type"] != "checkpoint"])
    return seen
