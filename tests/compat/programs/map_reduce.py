"""Map-reduce with Send: a fan-out whose width the state decides, joined by a reducer."""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict


class Overall(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best: str


class JokeState(TypedDict):
    subject: str


def topics(state: Overall):
    return {"subjects": ["cats", "dogs", "owls"]}


def fan_out(state: Overall):
    return [Send("joke", {"subject": s}) for s in state["subjects"]]


def joke(state: JokeState):
    return {"jokes": [f"a joke about {state['subject']}"]}


def best(state: Overall):
    return {"best": max(state["jokes"], key=len)}


def main(checkpointer):
    builder = StateGraph(Overall)
    builder.add_node("topics", topics)
    builder.add_node("joke", joke)
    builder.add_node("best", best)
    builder.add_edge(START, "topics")
    builder.add_conditional_edges("topics", fan_out, ["joke"])
    builder.add_edge("joke", "best")
    builder.add_edge("best", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "mr"}}
    seen = [graph.invoke({"subjects": [], "jokes": []}, config)]
    seen.extend(graph.stream({"subjects": [], "jokes": []}, {"configurable": {"thread_id": "m2"}}))
    seen.append(graph.get_state(config).values)
    return seen
