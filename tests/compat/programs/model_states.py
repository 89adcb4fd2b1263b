"""Pydantic-model and dataclass states: nodes get the model, invoke returns a dict, an
input may be a dict or a model instance, reducers and defaults as declared."""

import operator
from dataclasses import dataclass, field
from typing import Annotated

from langgraph.graph import START, StateGraph
from pydantic import BaseModel


class Model(BaseModel):
    n: int = 0
    log: Annotated[list, operator.add] = []


@dataclass
class Data:
    n: int = 0
    log: Annotated[list, operator.add] = field(default_factory=list)


def main(checkpointer):
    def inc(state: Model):
        return {"n": state.n + 1, "log": [type(state).__name__]}

    def inc2(state: Data):
        return {"n": state.n + 1, "log": [type(state).__name__]}

    g = StateGraph(Model)
    g.add_node("inc", inc)
    g.add_edge(START, "inc")
    app = g.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "m"}}
    seen = [app.invoke({"n": 1}, config), app.invoke(Model(n=5), config)]
    seen.append(app.get_state(config).values)
    g2 = StateGraph(Data)
    g2.add_node("inc", inc2)
    g2.add_edge(START, "inc")
    app2 = g2.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "d"}}
    seen.append(app2.invoke({"n": 1}, config))
    seen.append(list(app2.stream({"n": 3}, config, stream_mode="values")))
    return seen
