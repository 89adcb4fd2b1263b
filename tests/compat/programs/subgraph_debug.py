"""A subgraph's checkpoints and tasks in the debug stream: stream(stream_mode="debug",
subgraphs=True) on a graph nested two deep shows each subgraph's checkpoints under its
namespace, its tasks at its own steps, and get_state_history with the root's thread and a
subgraph's checkpoint_ns gives the checkpoints its stream showed (LangGraph's checkpoint
before the input, step -1, is left out: wayline commits the input as step 0)."""

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    messages: Annotated[list[str], operator.add]


def node(name):
    def run(state: State):
        return {"messages": [f"entered {name}"]}

    return run


def address(config):
    conf = config["configurable"]
    return (conf["checkpoint_ns"], conf["checkpoint_id"])


def main(checkpointer):
    child = StateGraph(State)
    child.add_node("c_one", node("c_one"))
    child.add_node("c_two", node("c_two"))
    child.add_edge(START, "c_one")
    child.add_edge("c_one", "c_two")
    child.add_edge("c_two", END)
    parent = StateGraph(State)
    parent.add_node("p_one", node("p_one"))
    parent.add_node("p_two", child.compile())
    parent.add_edge(START, "p_one")
    parent.add_edge("p_one", "p_two")
    grand = StateGraph(State)
    grand.add_node("gp_one", node("gp_one"))
    grand.add_node("gp_two", parent.compile())
    grand.add_edge(START, "gp_one")
    grand.add_edge("gp_one", "gp_two")
    app = grand.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "1"}}
    seen, streamed = [], {}
    for ns, event in app.stream({"messages": []}, config, stream_mode="debug", subgraphs=True):
        payload = event["payload"]
        if event["type"] == "checkpoint":
            if event["step"] < 0:
                continue
            streamed.setdefault(ns, []).append(payload)
            conf = payload["config"]["configurable"]
            shown = conf["checkpoint_ns"] == "|".join(ns)
            seen.append((len(ns), "checkpoint", event["step"], payload["next"], shown))
        else:
            seen.append((len(ns), event["type"], event["step"], payload["name"]))
    seen.append([[seg.split(":")[0] for seg in ns] for ns in streamed])
    for ns, payloads in streamed.items():
        conf = {"configurable": {"thread_id": "1", "checkpoint_ns": "|".join(ns)}}
        history = [s for s in app.get_state_history(conf) if s.metadata["step"] >= 0][::-1]
        seen.append(
            [
                (
                    s.values == p["values"],
                    list(s.next) == p["next"],
                    address(s.config) == address(p["config"]),
                    [t.state for t in s.tasks] == [t["state"] for t in p["tasks"]],
                    [t.state is not None for t in s.tasks],
                )
                for s, p in zip(history, payloads, strict=True)
            ]
        )
        seen.append(app.get_state(conf).values)
    return seen
