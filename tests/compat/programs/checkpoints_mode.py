"""stream_mode="checkpoints": differs on purpose (docs/porting.md). LangGraph checkpoints
the input twice before the first node (step -1, empty; step 0, the input); wayline commits
the input as one step. After that, one checkpoint per superstep on both."""

import operator
from typing import Annotated

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class S(TypedDict):
    log: Annotated[list, operator.add]


def main(checkpointer):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "cp"}}
    chunks = list(app.stream({"log": ["in"]}, config, stream_mode="checkpoints"))
    return [(c["values"], c["next"]) for c in chunks]
