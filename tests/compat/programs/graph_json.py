"""``get_graph().to_json()`` names each node's class as LangGraph's does: a function (or a
callable object) is LangGraph's ``RunnableCallable``; a node that is a langchain-core
Runnable itself is its class: a serializable one by its ``lc_id()`` (a chat model, a
``RunnableSequence``), any other by its module and name (a ``RunnableLambda``), and the
prebuilt ``ToolNode`` as ``langgraph.prebuilt.tool_node.ToolNode``; a subgraph is a
``CompiledStateGraph``."""

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda, RunnablePick
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode


@tool
def search(q: str) -> str:
    """Search for q."""
    return q


class Callable:
    def __call__(self, state):
        return {}


def main(checkpointer):
    inner = StateGraph(MessagesState)
    inner.add_node("step", lambda s: {})
    inner.add_edge(START, "step")
    g = StateGraph(MessagesState)
    g.add_node("tools", ToolNode([search]))
    g.add_node("lam", RunnableLambda(lambda s: {}))
    g.add_node("model", FakeMessagesListChatModel(responses=[AIMessage("x")]))
    g.add_node("seq", RunnablePick("messages") | RunnableLambda(lambda s: {}))
    g.add_node("obj", Callable())
    g.add_node("fn", lambda s: {})
    g.add_node("sub", inner.compile())
    for name in ("tools", "lam", "model", "seq", "obj", "fn", "sub"):
        g.add_edge(START, name)
    app = g.compile(checkpointer=checkpointer)
    # a node's data only: LangGraph 1.2.24 adds a ToolNode's tool names as metadata, 1.2.11
    # (whose test suite wayline runs) does not
    return [
        [(n["id"], n.get("data")) for n in graph.to_json()["nodes"]]
        for graph in (app.get_graph(), app.get_graph(xray=True))
    ]
