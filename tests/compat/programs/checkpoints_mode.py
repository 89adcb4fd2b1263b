"""LangGraph's input checkpoint (issue 25, lghist): before each input, a checkpoint of the
state as it was (``source: "input"``, next ``__start__``, its task's result the input),
then the input applied (``source: "loop"``); a past checkpoint's tasks with the results
they wrote. In the history, the checkpointer's ``list``,
the ``checkpoints`` and ``debug`` streams; its config read, replayed and edited; with
``durability="exit"``, one checkpoint an invocation. Step numbers after a second input
differ on purpose (docs/porting.md), so only the first invocation's are compared."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class S(TypedDict):
    log: Annotated[list, operator.add]


def build(checkpointer):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=checkpointer)


def seen(s):
    results = [(t.name, t.result) for t in s.tasks]  # a past step's: what its tasks wrote
    return [s.metadata["source"], list(s.next), s.values, results, s.parent_config is None]


def streams(checkpointer):
    app = build(checkpointer)
    config = {"configurable": {"thread_id": "cp"}}
    chunks = list(app.stream({"log": ["in"]}, config, stream_mode="checkpoints"))
    first = [
        (c["values"], c["next"], c["metadata"], [t["name"] for t in c["tasks"]]) for c in chunks
    ]
    debug = list(app.stream({"log": ["in2"]}, config, stream_mode="debug"))
    second = [
        (c["payload"]["metadata"]["source"], c["payload"]["next"], c["payload"]["values"])
        for c in debug
        if c["type"] == "checkpoint"
    ]
    return [first, second]


def history(checkpointer):
    app = build(checkpointer)
    config = {"configurable": {"thread_id": "h"}}
    app.invoke({"log": ["in"]}, config)
    once = [(s.metadata["step"], *seen(s)) for s in app.get_state_history(config)]
    listed = [(t.metadata["step"], t.metadata["source"]) for t in app.checkpointer.list(config)]
    app.invoke({"log": ["in2"]}, config)
    twice = [seen(s) for s in app.get_state_history(config)]
    latest = list(app.get_state_history(config, limit=2))
    before = [seen(s) for s in app.get_state_history(config, before=latest[-1].config)]
    return [once, listed, twice, before[:2]]


def addresses(checkpointer):
    app = build(checkpointer)
    config = {"configurable": {"thread_id": "addr"}}
    app.invoke({"log": ["in"]}, config)
    app.invoke({"log": ["in2"]}, config)
    inputs = [s for s in app.get_state_history(config) if s.metadata["source"] == "input"]
    first, later = inputs[-1], inputs[0]
    read = [seen(app.get_state(first.config)), seen(app.get_state(later.config))]
    tup = app.checkpointer.get_tuple(first.config)
    replayed = [app.invoke(None, first.config), app.invoke(None, later.config)]
    edited = app.get_state(app.update_state(first.config, {"log": ["u"]}))
    edited_later = app.get_state(app.update_state(later.config, {"log": ["u"]}))
    return [
        read,
        [tup.metadata["source"], tup.metadata["step"], tup.parent_config],
        replayed,
        [edited.metadata["source"], edited.values, edited.next],
        [edited_later.metadata["source"], edited_later.values, edited_later.next],
    ]


def exit_mode(checkpointer):
    app = build(checkpointer)
    config = {"configurable": {"thread_id": "exit"}}
    counts = []
    for given in (["in"], ["in2"]):
        app.invoke({"log": given}, config, durability="exit")
        counts.append([(s.metadata["source"], s.values) for s in app.get_state_history(config)])
    return counts


def main(checkpointer):
    parts = (streams, history, addresses, exit_mode)
    return [(part.__name__, part(checkpointer)) for part in parts]
