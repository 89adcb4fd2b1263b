"""How a checkpoint lists its tasks (``StateSnapshot.tasks`` and ``next``): the Sends first,
in the order they were sent, each with the path ``("__pregel_push", i, False)``, then the
nodes triggered by edges in the order they were added to the builder (not by name), in
``get_state`` and in ``get_state_history`` alike; a finished peer's result stays listed. A
single-value state's task result (``StateGraph(Annotated[list, add])``) is the value the task
wrote, and ``__start__``'s the input. ``StateSnapshot`` and ``PregelTask`` have ``_replace``,
as LangGraph's named tuples. The checkpointer lists such a state under its one channel,
``__root__``, in the values and the pending writes."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from langgraph.types import Send, interrupt
from typing_extensions import TypedDict


class Log(TypedDict):
    log: Annotated[list, operator.add]


def _write(name):
    return lambda s: {"log": [name]}


def view(snapshot):
    return (
        snapshot.next,
        [(t.name, t.path, t.result, [i.value for i in t.interrupts]) for t in snapshot.tasks],
        [i.value for i in snapshot.interrupts],
    )


def _breakpoints(checkpointer):
    g = StateGraph(Log)
    for name in ("zz", "b", "a"):
        g.add_node(name, _write(name))
    g.add_conditional_edges(START, lambda s: ["zz", "a", Send("b", s), "b", Send("a", s)])
    app = g.compile(checkpointer=checkpointer, interrupt_before=["a", "b", "zz"])
    config = {"configurable": {"thread_id": "breakpoints"}}
    app.invoke({"log": []}, config)
    return [view(app.get_state(config))] + [view(s) for s in app.get_state_history(config)]


def _peer_done(checkpointer):
    def ask(state):
        return {"log": [interrupt("why?")]}

    g = StateGraph(Log)
    g.add_node("ask", ask)
    g.add_node("peer", _write("peer"))
    g.set_conditional_entry_point(lambda s: ["ask", Send("peer", s)])
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "peer"}}
    app.invoke({"log": ["in"]}, config)
    return view(app.get_state(config))


def _single_value(checkpointer):
    g = StateGraph(Annotated[list, operator.add])
    g.add_node("one", lambda s: ["one"])
    g.add_node("two", lambda s: [f"two|{s}"])
    g.add_node("quiet", lambda s: [])
    g.add_edge(START, "one")
    g.add_conditional_edges("one", lambda s: [Send("two", 1), Send("two", 2), "quiet"])
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "single"}}
    out = [app.invoke(["in"], config)]
    out += [(s.values, view(s)) for s in app.get_state_history(config)]
    latest = app.get_state(config)
    moved = latest._replace(next=("x",), parent_config=None)
    out.append((moved.next, moved.parent_config, moved.values == latest.values))
    first = list(app.get_state_history(config))[1].tasks[0]
    out.append(first._replace(result="changed").result)
    for saved in app.checkpointer.list(config):  # the checkpointer's reading: one channel
        writes = [(c, v) for _, c, v in saved.pending_writes if c == "__root__"]
        if saved.metadata["source"] != "input":  # LangGraph's holds no empty channel there
            out.append((saved.checkpoint["channel_values"].get("__root__"), sorted(writes)))
    return out


def main(checkpointer):
    return [_breakpoints(checkpointer), _peer_done(checkpointer), _single_value(checkpointer)]
