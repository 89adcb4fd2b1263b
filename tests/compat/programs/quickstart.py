"""LangGraph's quickstart shape, whole: it builds its own InMemorySaver and annotates with
CompiledStateGraph, so the port is the rename and nothing else."""

import operator
from typing import Annotated

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import END, START
from langgraph.graph.state import CompiledStateGraph, StateGraph
from typing_extensions import TypedDict


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def research(state: State):
    return {"notes": [f"facts about {state['topic']}"]}


def write(state: State):
    return {"notes": [f"a post from {len(state['notes'])} note(s)"]}


def build() -> CompiledStateGraph:
    builder = StateGraph(State)
    builder.add_node("research", research)
    builder.add_node("write", write)
    builder.add_edge(START, "research")
    builder.add_edge("research", "write")
    builder.add_edge("write", END)
    return builder.compile(checkpointer=InMemorySaver())


def main(checkpointer):
    graph = build()
    config = {"configurable": {"thread_id": "q"}}
    first = graph.invoke({"topic": "owls", "notes": []}, config)
    return [first, graph.invoke({"topic": "bats"}, config), graph.get_state(config).next]
