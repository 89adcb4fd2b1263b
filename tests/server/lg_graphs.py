"""LangGraph graphs the server tests serve (LangGraph's own engine on the server's
workers): ``lg_configured`` says which config and context it ran with; ``lg_chatty``
writes ``custom`` chunks and calls a chat model (tokens for ``messages`` streams);
``lg_nested`` does what ``lg_chatty`` does inside a subgraph;
``lg_memory`` reads and writes LangGraph's long-term store (``store: BaseStore`` and
``runtime.store``), served with an index (``LETTERS``: a deterministic embedding);
``lg_slow`` ticks, slowly enough to be busy."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config, get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

REPLY = "tokens from a LangGraph node"


class Said(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _say(state: Said, runtime: Runtime[Any]) -> dict[str, Any]:
    config = get_config()
    model = (config.get("configurable") or {}).get("model")
    tags = sorted(config.get("tags") or [])
    return {"items": [f"model={model}", f"context={runtime.context}", f"tags={tags}"]}


def lg_configured() -> Any:
    g = StateGraph(Said)
    g.add_node("say", _say)
    g.add_edge(START, "say")
    g.add_edge("say", END)
    return g.compile(name="lg_configured")


class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    n: int


def _prepare(state: Chat) -> dict[str, Any]:
    get_stream_writer()({"progress": "prepared"})
    return {"n": 1}


def _model(state: Chat) -> dict[str, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    get_stream_writer()({"progress": "calling the model"})
    model = GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))
    return {"messages": [model.invoke(state["messages"])], "n": 2}


def lg_chatty() -> Any:
    g = StateGraph(Chat)
    g.add_node("prepare", _prepare)
    g.add_node("model", _model)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "model")
    g.add_edge("model", END)
    return g.compile(name="lg_chatty")


def _inner(state: Chat) -> dict[str, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    get_stream_writer()({"progress": "inside"})
    model = GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))
    return {"messages": [model.invoke(state["messages"])], "n": 2}


def lg_nested() -> Any:
    inner = StateGraph(Chat)
    inner.add_node("inner", _inner)
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)
    g = StateGraph(Chat)
    g.add_node("prepare", _prepare)
    g.add_node("child", inner.compile())
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "child")
    g.add_edge("child", END)
    return g.compile(name="lg_nested")


LETTERS = "aeiourstnl"


def letters(texts: Any) -> list[list[float]]:
    """How often each of ten letters occurs in each text: the same vector every run."""
    return [[float(str(t).lower().count(c)) for c in LETTERS] for t in texts]


def _remember(state: Said, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
    user = config["configurable"]["user_id"]
    seen = sorted(i.key for i in store.search(("memories", user)))
    store.put(("memories", user), "from-run", {"text": "rain on the plain"})
    return {"items": [f"seen={seen}"]}


def _recall(state: Said, runtime: Runtime[Any]) -> dict[str, Any]:
    user = get_config()["configurable"]["user_id"]
    assert runtime.store is not None
    best = runtime.store.search(("memories", user), query="rain", limit=1)
    return {"items": [f"best={best[0].key}"]}


def lg_memory() -> Any:
    g = StateGraph(Said)
    g.add_node("remember", _remember)
    g.add_node("recall", _recall)
    g.add_edge(START, "remember")
    g.add_edge("remember", "recall")
    g.add_edge("recall", END)
    return g.compile(name="lg_memory")


class Ticks(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int
    until: int


def _tick(state: Ticks) -> dict[str, Any]:
    import time

    time.sleep(0.05)  # long enough for a second run to find the thread busy
    n = state.get("n", 0)
    return {"items": [f"t{n}"], "n": n + 1}


def lg_slow() -> Any:
    """Ticks until n reaches the input's target, as the server tests' ``slow`` does."""
    g = StateGraph(Ticks)
    g.add_node("tick", _tick)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s.get("until", 40) else END)
    return g.compile(name="lg_slow")


def served_graphs(store: Any) -> dict[str, Any]:
    from wayline.langgraph.served import served
    from wayline.langgraph.store import WaylineStore

    index = {"dims": len(LETTERS), "embed": letters, "fields": ["text"]}
    return {
        "lg_configured": served(lg_configured(), store),
        "lg_chatty": served(lg_chatty(), store),
        "lg_nested": served(lg_nested(), store),
        "lg_memory": served(lg_memory(), store, memory=WaylineStore(index=index)),
        "lg_slow": served(lg_slow(), store),
    }
