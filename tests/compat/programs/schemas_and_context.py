"""State schemas: typing_extensions.TypedDict, inheritance from MessagesState,
total=False, input/output schemas, a node reading a private input schema, and
context_schema with nodes taking (state, runtime: Runtime[Ctx]) and invoke(context=...)."""

import operator
from dataclasses import dataclass
from typing import Annotated

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime, get_runtime
from typing_extensions import TypedDict


@dataclass
class Ctx:
    user: str
    model: str = "small"


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Overall(In, Out, total=False):
    scratch: Annotated[list, operator.add]


class Chat(MessagesState):
    turns: int


def think(state: Overall, runtime: Runtime[Ctx]):
    return {"scratch": [f"{runtime.context.user} asks {state['question']}"]}


def answer(state: Overall):
    ctx = get_runtime(Ctx).context
    return {"answer": f"{state['scratch'][-1]} ({ctx.model})"}


def count(state: Chat, config):
    return {
        "turns": state.get("turns", 0) + 1,
        "messages": [("ai", config["configurable"]["thread_id"])],
    }


def main(checkpointer):
    b = StateGraph(Overall, context_schema=Ctx, input_schema=In, output_schema=Out)
    b.add_node("think", think)
    b.add_node("answer", answer)
    b.add_edge(START, "think")
    b.add_edge("think", "answer")
    b.add_edge("answer", END)
    graph = b.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "ctx"}}
    seen = [graph.invoke({"question": "why?"}, config, context=Ctx(user="ann", model="big"))]
    seen.append(graph.get_state(config).values)
    seen.append(
        list(
            graph.stream(
                {"question": "how?"},
                {"configurable": {"thread_id": "c2"}},
                context=Ctx(user="bo"),
                stream_mode="values",
            )
        )
    )

    c = StateGraph(Chat)
    c.add_node("count", count)
    c.add_edge(START, "count")
    chat = c.compile(checkpointer=checkpointer)
    cfg = {"configurable": {"thread_id": "chat"}}
    seen.append(chat.invoke({"messages": [("user", "hi")]}, cfg))
    seen.append(chat.invoke({"messages": [("user", "again")]}, cfg)["turns"])
    return seen
