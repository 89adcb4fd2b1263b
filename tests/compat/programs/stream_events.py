"""``astream_events(version="v2")``: the root run, each node's run (its start, its output
as a chunk, its end), a runnable and a chat model called in a node (the model's tokens as
``on_chat_model_stream``), and the graph's stream chunks, in LangGraph's order."""

import asyncio

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict


class S(TypedDict):
    x: int
    text: str


def main(checkpointer):
    double = RunnableLambda(lambda n: n * 2).with_config(run_name="double")
    model = GenericFakeChatModel(messages=iter([AIMessage(content="hello there")]))

    async def first(s: S):
        return {"x": await double.ainvoke(s["x"])}

    async def talk(s: S):
        reply = await model.ainvoke("hi")
        return {"text": reply.content}

    graph = (
        StateGraph(S)
        .add_node("first", first)
        .add_node("talk", talk)
        .add_edge(START, "first")
        .add_edge("first", "talk")
        .compile(checkpointer=checkpointer)
    )

    def seen(event):
        data = event["data"]
        chunk = data.get("chunk")
        return (
            event["event"],
            event["name"],
            [t for t in event["tags"] if t.startswith(("graph:step", "seq:step"))],
            len(event["parent_ids"]),
            {
                k: event["metadata"].get(k)
                for k in ("thread_id", "langgraph_node", "langgraph_step")
            },
            getattr(chunk, "content", chunk),
            data.get("output") if event["event"] == "on_chain_end" else None,
        )

    async def go():
        config = {"configurable": {"thread_id": "e1"}}
        return [seen(e) async for e in graph.astream_events({"x": 1}, config, version="v2")]

    return asyncio.run(go())
