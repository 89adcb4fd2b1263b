"""Streaming through a subgraph: stream(subgraphs=True) with messages and updates (the
child's tokens under its namespace), then without subgraphs (the child's reply arrives as
its node's output); Command(goto=Send(...))."""

import itertools

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, Send


def main(checkpointer):
    llm = GenericFakeChatModel(messages=itertools.cycle([AIMessage("a b")]))

    def talk(state: MessagesState):
        return {"messages": [llm.invoke(state["messages"])]}

    child = StateGraph(MessagesState)
    child.add_node("talk", talk)
    child.add_edge(START, "talk")
    parent = StateGraph(MessagesState)
    parent.add_node("inner", child.compile())
    parent.add_node("hop", lambda s: Command(goto=Send("last", {"messages": []})))
    parent.add_node("last", lambda s: {"messages": [AIMessage("bye")]})
    parent.add_edge(START, "inner")
    parent.add_edge("inner", "hop")
    app = parent.compile(checkpointer=checkpointer)
    seen = []
    start = {"messages": [("user", "hi")]}
    for ns, mode, chunk in app.stream(
        start,
        {"configurable": {"thread_id": "1"}},
        subgraphs=True,
        stream_mode=["messages", "updates"],
    ):
        if mode == "messages":
            seen.append((len(ns), mode, chunk[0].content, chunk[1]["langgraph_node"]))
        else:
            seen.append((len(ns), mode, chunk))
    for mode, chunk in app.stream(
        start, {"configurable": {"thread_id": "2"}}, stream_mode=["messages"]
    ):
        seen.append((mode, chunk[0].content, chunk[1]["langgraph_node"]))
    return seen
