"""Human in the loop: interrupt() and Command(resume=...), Command(goto=...) from a node,
breakpoints (interrupt_before / interrupt_after), update_state while paused."""

import operator
from typing import Annotated, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict


class State(TypedDict):
    request: str
    decision: str
    log: Annotated[list, operator.add]


def draft(state: State):
    return {"log": [f"draft {state['request']}"]}


def approve(state: State) -> Command[Literal["send", "revise"]]:
    answer = interrupt({"question": "approve?", "draft": state["request"]})
    if answer["ok"]:
        return Command(update={"decision": "yes", "log": ["approved"]}, goto="send")
    return Command(update={"decision": "no", "log": ["rejected"]}, goto="revise")


def revise(state: State):
    note = interrupt("what should change?")
    return {"request": f"{state['request']} ({note})", "log": ["revised"]}


def send(state: State):
    return {"log": ["sent"]}


def main(checkpointer):
    builder = StateGraph(State)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_node("revise", revise)
    builder.add_node("send", send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("revise", "approve")
    builder.add_edge("send", END)
    graph = builder.compile(checkpointer=checkpointer)
    seen = []
    config = {"configurable": {"thread_id": "h1"}}
    out = graph.invoke({"request": "refund 40", "decision": "", "log": []}, config)
    seen.append(out)
    seen.append(graph.get_state(config).next)
    seen.append([i.value for i in graph.get_state(config).interrupts])
    seen.append(graph.invoke(Command(resume={"ok": False}), config))
    seen.append(graph.invoke(Command(resume="make it 30"), config))
    for chunk in graph.stream(Command(resume={"ok": True}), config, stream_mode="updates"):
        seen.append(chunk)
    seen.append(graph.get_state(config).values)

    paused = builder.compile(
        checkpointer=checkpointer, interrupt_before=["approve"], interrupt_after=["draft"]
    )
    config = {"configurable": {"thread_id": "h2"}}
    seen.append(paused.invoke({"request": "r", "decision": "", "log": []}, config))
    seen.append(paused.get_state(config).next)
    paused.update_state(config, {"request": "r2"})
    seen.append(paused.invoke(None, config))
    seen.append(paused.get_state(config).next)
    seen.append(paused.invoke(None, config))
    seen.append(paused.invoke(Command(resume={"ok": True}), config))

    config = {"configurable": {"thread_id": "h3"}}
    plain = builder.compile(checkpointer=checkpointer)
    seen.append(
        plain.invoke(
            {"request": "q", "decision": "", "log": []}, config, interrupt_before=["draft"]
        )
    )
    seen.append(plain.get_state(config).next)
    return seen
