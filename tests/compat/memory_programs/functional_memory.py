"""The functional API: an entrypoint with a store parameter and a task using get_store()."""

from typing import Any

from langgraph.config import get_store
from langgraph.func import entrypoint, task
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore


@task
def remember(user: str, fact: str) -> str:
    get_store().put(("facts", user), fact, {"fact": fact})
    return fact


def main(checkpointer: Any, store: Any = None) -> list[Any]:
    store = store if store is not None else InMemoryStore()

    @entrypoint(checkpointer=checkpointer, store=store)
    def agent(inputs: dict[str, Any], *, store: BaseStore) -> dict[str, Any]:
        done = [remember(inputs["user"], f).result() for f in inputs["facts"]]
        known = sorted(i.key for i in store.search(("facts", inputs["user"])))
        return {"stored": done, "known": known}

    out = []
    for i, (user, facts) in enumerate([("ann", ["a", "b"]), ("ann", ["c"]), ("bob", ["z"])]):
        config = {"configurable": {"thread_id": f"f{i}"}}
        out.append(agent.invoke({"user": user, "facts": facts}, config))
    return out
