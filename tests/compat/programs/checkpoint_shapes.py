"""The dicts inside a snapshot as LangGraph spells them (issue 25, shape helper): the
configurable keys of ``get_state``'s config and parent_config, of ``update_state``'s return
and of the ``checkpoints`` stream, and the metadata keys of each checkpoint (LangGraph's
``source``, ``step`` and ``parents``; wayline's read figures are not among them). The
checkpoint ids themselves differ (LangGraph's are time-based), so their keys are compared."""

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class S(TypedDict):
    x: Annotated[list, operator.add]


def shape(config):
    if config is None:
        return None
    conf = config["configurable"]
    return {k: ("<id>" if k == "checkpoint_id" else v) for k, v in conf.items()}


def main(checkpointer):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    app = g.compile(checkpointer=checkpointer, interrupt_before=["b"])
    config = {"configurable": {"thread_id": "1"}}
    app.invoke({"x": ["in"]}, config)
    state = app.get_state(config)
    out = [shape(state.config), shape(state.parent_config), state.metadata]
    out.append(shape(app.update_state(config, {"x": ["u"]})))
    chunks = [c for m, c in app.stream(None, config, stream_mode=["checkpoints", "updates"])]
    last = chunks[-1]  # the checkpoint b's step made
    out.append((shape(last["config"]), shape(last["parent_config"]), last["metadata"]))
    out.append(sorted(app.get_state(config).metadata))
    return out
