"""A LangGraph graph with parallel writes, a subgraph that interrupts, and a node that
fails once; run step by step in separate processes by test_fresh_process_resume.py.

    python resume_graph.py URL PHASE EXEC_LOG OUT

PHASE ``start`` (b fails: a's write is pending), ``continue`` (resumes to the subgraph's
interrupt), ``answer`` (resumes with the decision to the end). Each prints what it saw.
"""

from __future__ import annotations

import json
import operator
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

THREAD = {"configurable": {"thread_id": "resume-1"}}


class State(TypedDict):
    log: Annotated[list[str], operator.add]
    n: int
    answer: str


class Sub(TypedDict):
    log: Annotated[list[str], operator.add]
    answer: str


def build(checkpointer: Any, exec_log: str | None, fail_b: bool) -> Any:
    def note(name: str) -> None:
        if exec_log:
            with open(exec_log, "a") as f:
                f.write(name + "\n")

    def a(state: State) -> dict[str, Any]:
        note("a")
        return {"log": ["a" * 300]}

    def b(state: State) -> dict[str, Any]:
        note("b")
        if fail_b:
            raise RuntimeError("b fails on its first run")
        return {"log": ["b"], "n": state["n"] + 1}

    def ask(state: Sub) -> dict[str, Any]:
        note("ask")
        return {"answer": interrupt({"question": "ship?", "seen": len(state["log"])})}

    def after(state: Sub) -> dict[str, Any]:
        note("after")
        return {"log": [f"answered {state['answer']}"]}

    sg = StateGraph(Sub)
    sg.add_node("ask", ask)
    sg.add_node("after", after)
    sg.add_edge(START, "ask")
    sg.add_edge("ask", "after")
    sg.add_edge("after", END)

    def tail(state: State) -> dict[str, Any]:
        note("tail")
        return {"log": [f"tail {len(state['log'])}"], "n": state["n"] + 1}

    g = StateGraph(State)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("sub", sg.compile())
    g.add_node("tail", tail)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "sub")
    g.add_edge("sub", "tail")
    g.add_edge("tail", END)
    return g.compile(checkpointer=checkpointer)


def summary(app: Any) -> dict[str, Any]:
    st = app.get_state(THREAD, subgraphs=True)
    history = [
        (h.metadata.get("source"), h.metadata.get("step"), sorted(h.next))
        for h in app.get_state_history(THREAD)
    ]
    sub = [t.state.values for t in st.tasks if t.state is not None]
    return {
        "values": st.values,
        "next": sorted(st.next),
        "interrupts": [i.value for t in st.tasks for i in t.interrupts],
        "sub_values": [v for v in sub if v],
        "history": history,
    }


def main() -> None:
    from wayline.langgraph import WaylineSaver

    url, phase, exec_log, out = sys.argv[1:5]
    saver = WaylineSaver.from_url(url)
    app = build(saver, exec_log, fail_b=phase == "start")
    result: Any = None
    if phase == "start":
        try:
            app.invoke({"log": [], "n": 0, "answer": ""}, THREAD, durability="sync")
        except RuntimeError as exc:
            result = f"failed: {exc}"
    elif phase == "continue":
        result = app.invoke(None, THREAD, durability="sync")
    else:
        result = app.invoke(Command(resume="yes"), THREAD, durability="sync")
    report = {"result": json.loads(json.dumps(result, default=repr)), **summary(app)}
    saver.close()
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
