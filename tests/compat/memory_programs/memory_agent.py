"""A memory agent across two threads: thread 1 learns a preference (a store parameter,
namespaced by the user in the config), thread 2 uses it; a third user has none."""

from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore


class State(TypedDict):
    message: str
    reply: str


def learn(state: State, config: RunnableConfig, store: BaseStore) -> dict[str, Any]:
    user = config["configurable"]["user_id"]
    if state["message"].startswith("I like "):
        store.put(("memories", user), "likes", {"likes": state["message"][7:]})
    return {}


def answer(state: State, config: RunnableConfig, store: BaseStore) -> dict[str, Any]:
    user = config["configurable"]["user_id"]
    item = store.get(("memories", user), "likes")
    found = [i.key for i in store.search(("memories", user))]
    reply = f"you like {item.value['likes']}" if item else "I know nothing about you"
    return {"reply": f"{reply} ({len(found)} memories)"}


def main(checkpointer: Any, store: Any = None) -> list[Any]:
    store = store if store is not None else InMemoryStore()
    b = StateGraph(State)
    b.add_node("learn", learn)
    b.add_node("answer", answer)
    b.add_edge(START, "learn")
    b.add_edge("learn", "answer")
    b.add_edge("answer", END)
    graph = b.compile(checkpointer=checkpointer, store=store)
    out = []
    for thread, user, message in [
        ("t1", "ann", "I like green tea"),
        ("t2", "ann", "what do I like?"),
        ("t3", "bob", "what do I like?"),
        ("t4", "ann", "I like coffee"),
        ("t5", "ann", "and now?"),
    ]:
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        out.append(graph.invoke({"message": message, "reply": ""}, config)["reply"])
    out.append(store.list_namespaces(prefix=("memories",), suffix=("ann",)))
    out.append(store.get(("memories", "ann"), "likes").value)
    return out
