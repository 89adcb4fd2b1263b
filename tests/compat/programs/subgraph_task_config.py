"""A subgraph task's state in get_state() without subgraphs: the config naming the
subgraph (the root's thread_id and the task's checkpoint_ns), which the root's
get_state, get_state_history and update_state read and edit: a Send to a subgraph paused
at its own interrupt_before, one Send's subgraph state edited, then the parent resumed."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class OverallState(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]


class JokeState(TypedDict):
    subject: str


def main(checkpointer):
    def fan_out(state: OverallState):
        return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]

    def edit(state: JokeState):
        return {"subject": f"{state['subject']} - hohoho"}

    def generate(state: JokeState):
        return {"jokes": [f"Joke about {state['subject']}"]}

    sub = StateGraph(JokeState, output_schema=OverallState)
    sub.add_node("edit", edit)
    sub.add_node("generate", generate)
    sub.add_edge(START, "edit")
    sub.add_edge("edit", "generate")
    sub.add_edge("generate", END)
    builder = StateGraph(OverallState)
    builder.add_node("generate_joke", sub.compile(interrupt_before=["generate"]))
    builder.add_conditional_edges(START, fan_out)
    builder.add_edge("generate_joke", END)
    app = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "1"}}
    seen = [app.invoke({"subjects": ["cats", "dogs"]}, config)]
    tasks = app.get_state(config).tasks
    for task in tasks:
        conf = task.state["configurable"]
        seen.append((task.name, sorted(conf), conf["thread_id"]))
        seen.append(conf["checkpoint_ns"].startswith("generate_joke:"))
        seen.append(app.get_state(task.state).values)
        seen.append([s.next for s in app.get_state_history(task.state)][:2])
    app.update_state(tasks[1].state, {"subject": "turtles - hohoho"})
    seen.append(app.get_state(tasks[1].state).values)
    chunks = app.stream(None, config)
    seen.append(sorted(chunks, key=lambda c: c["generate_joke"]["jokes"][0]))
    seen.append(app.get_state(config).values)
    return seen
