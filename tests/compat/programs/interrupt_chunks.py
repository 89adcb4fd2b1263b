"""How LangGraph streams the questions of a step whose tasks interrupt in parallel: one
``updates`` chunk ``{"__interrupt__": (...)}`` per task that asked, also on a resume that
answers one of them; the result of ``invoke`` carries them all."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict


class State(TypedDict):
    prompts: list[str]
    answers: Annotated[list, operator.add]


def ask(arg: dict) -> dict:
    first = interrupt(arg["prompt"])
    second = interrupt(arg["prompt"] + "?") if arg["prompt"] == "b" else None
    return {"answers": [(first, second)]}


def _graph(checkpointer):
    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_conditional_edges(START, lambda s: [Send("ask", {"prompt": p}) for p in s["prompts"]])
    return g.compile(checkpointer=checkpointer)


def _values(chunk: dict) -> list:
    return sorted(i.value for i in chunk["__interrupt__"])


def main(checkpointer):
    app = _graph(checkpointer)
    config = {"configurable": {"thread_id": "chunks"}}
    seen = []
    chunks = list(app.stream({"prompts": ["a", "b"], "answers": []}, config))
    seen.append(sorted(_values(c) for c in chunks))
    pending = {i.value: i.id for i in app.get_state(config).interrupts}
    chunks = list(app.stream(Command(resume={pending["b"]: "B"}), config))
    seen.append(sorted(_values(c) for c in chunks if "__interrupt__" in c))
    out = app.invoke({"prompts": ["c", "d"], "answers": []}, {"configurable": {"thread_id": "x"}})
    seen.append(sorted(i.value for i in out["__interrupt__"]))
    return seen
