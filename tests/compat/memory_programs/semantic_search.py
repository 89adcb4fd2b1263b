"""Semantic search with a deterministic fake embedding: a node searches memories by
meaning (letter counts stand in for a model), filtered, and ranked with scores."""

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

LETTERS = "aeiourstnl"


def embed(texts: list[str]) -> list[list[float]]:
    return [[float(t.lower().count(c)) for c in LETTERS] for t in texts]


INDEX = {"dims": len(LETTERS), "embed": embed, "fields": ["text"]}


class State(TypedDict):
    query: str
    hits: list[Any]


def recall(state: State, store: BaseStore) -> dict[str, Any]:
    found = store.search(("docs",), query=state["query"], limit=3)
    sky = store.search(("docs",), query=state["query"], filter={"kind": "sky"}, limit=2)
    return {
        "hits": [[i.key, round(i.score, 6) if i.score is not None else None] for i in found]
        + [[i.key for i in sky]]
    }


def main(checkpointer: Any, store: Any = None) -> list[Any]:
    store = store if store is not None else InMemoryStore(index=INDEX)
    docs = {
        "tea": ("tea is a drink", "drink"),
        "sun": ("the sun is out", "sky"),
        "rain": ("rain in the plain", "sky"),
        "toast": ("toast and butter", "food"),
    }
    for key, (text, kind) in docs.items():
        store.put(("docs",), key, {"text": text, "kind": kind})
    store.put(("docs",), "secret", {"text": "sun sun", "kind": "sky"}, index=False)
    b = StateGraph(State)
    b.add_node("recall", recall)
    b.add_edge(START, "recall")
    b.add_edge("recall", END)
    graph = b.compile(checkpointer=checkpointer, store=store)
    out = []
    for i, query in enumerate(["sun", "tea", "rain on toast"]):
        config = {"configurable": {"thread_id": f"q{i}"}}
        out.append(graph.invoke({"query": query, "hits": []}, config)["hits"])
    return out
