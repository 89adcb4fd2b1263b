"""get_store() and Runtime.store (with a context schema): the same store from both."""

from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore


@dataclass
class Context:
    user_id: str


class State(TypedDict):
    topic: str
    notes: list[str]


def write(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ns = ("notes", runtime.context.user_id)
    runtime.store.put(ns, state["topic"], {"topic": state["topic"], "n": len(state["topic"])})
    return {}


def read(state: State) -> dict[str, Any]:
    store = get_store()
    found = store.search(("notes",), filter={"n": {"$gte": 4}}, limit=10)
    return {"notes": sorted(f"{i.namespace[1]}:{i.key}" for i in found)}


def main(checkpointer: Any, store: Any = None) -> list[Any]:
    store = store if store is not None else InMemoryStore()
    b = StateGraph(State, context_schema=Context)
    b.add_node("write", write)
    b.add_node("read", read)
    b.add_edge(START, "write")
    b.add_edge("write", "read")
    b.add_edge("read", END)
    graph = b.compile(checkpointer=checkpointer, store=store)
    out = []
    for i, (user, topic) in enumerate([("ann", "tea"), ("bob", "rust"), ("ann", "python")]):
        config = {"configurable": {"thread_id": f"s{i}"}}
        result = graph.invoke({"topic": topic, "notes": []}, config, context=Context(user))
        out.append(result["notes"])
    return out
