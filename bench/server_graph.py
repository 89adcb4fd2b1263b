"""The graph ``bench/server.py`` serves with ``wayline serve``: one trivial node looping on
itself for ``steps`` node steps, appending a ~100-byte item each step (the same graph the
script gives ``langgraph dev``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph, add_messages


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int
    steps: int


def tick(s: State) -> dict[str, Any]:
    return {"log": ["x" * 100], "n": s.get("n", 0) + 1}


g = StateGraph(State, name="bench")
g.add_node("tick", tick)
g.add_edge(START, "tick")
g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s["steps"] else END)
graph = g


# -- the chat graph of ``bench/server.py --chat``: one node calling a chat model ------------

REPLY = " ".join(f"word{i}" for i in range(40))
"""What the fake chat model answers: 40 words, 79 tokens (words and the spaces between)."""


class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]


def answer(s: Chat) -> dict[str, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    model = GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))
    return {"messages": [model.invoke(s["messages"])]}


c = StateGraph(Chat, name="chat")
c.add_node("model", answer)
c.add_edge(START, "model")
c.add_edge("model", END)
chat = c
