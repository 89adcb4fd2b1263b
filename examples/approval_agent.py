"""LangGraph's "tool loop with human approval" tutorial agent, ported to wayline by renaming
its imports (``langgraph`` -> ``wayline``) and passing a wayline store as the checkpointer.
Runs without network: the chat model is langchain-core's fake model, scripted.

    pip install "wayline[langchain]"
    python examples/approval_agent.py [runs.db]

The agent asks to refund an order; before any tool runs, ``human_review`` interrupts with
the proposed calls. The run waits (nothing holds a worker while it does); the script then
answers as the reviewer would, first asking for a smaller amount, then approving, and the
run continues from its last committed step, in this process or in any other.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

import wayline
from wayline.graph import END, START, MessagesState, StateGraph
from wayline.prebuilt import ToolNode
from wayline.types import Command, interrupt


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: 2 items, 120 EUR, delivered"


@tool
def refund(order_id: str, amount: int) -> str:
    """Refund part of an order."""
    return f"refunded {amount} EUR on {order_id}"


def scripted_model() -> GenericFakeChatModel:
    def call(name: str, call_id: str, **args: object) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])

    return GenericFakeChatModel(
        messages=iter(
            [
                call("lookup_order", "1", order_id="A7"),
                call("refund", "2", order_id="A7", amount=120),
                call("refund", "3", order_id="A7", amount=60),
                AIMessage("Refunded 60 EUR on order A7."),
            ]
        )
    )


def build(checkpointer: wayline.Store | str | None) -> wayline.CompiledGraph:
    model = scripted_model()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> Literal["human_review", "__end__"]:
        return "human_review" if state["messages"][-1].tool_calls else END

    def human_review(state: MessagesState) -> Command[Literal["tools", "agent"]]:
        calls = state["messages"][-1].tool_calls
        if all(c["name"] == "lookup_order" for c in calls):
            return Command(goto="tools")  # reading is safe; only refunds need a person
        decision = interrupt({"question": "run these tool calls?", "calls": calls})
        if decision["action"] == "approve":
            return Command(goto="tools")
        feedback = [
            ToolMessage(content=decision["feedback"], name=c["name"], tool_call_id=c["id"])
            for c in calls
        ]
        return Command(goto="agent", update={"messages": feedback})

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("human_review", human_review)
    builder.add_node("tools", ToolNode([lookup_order, refund]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def main(path: str) -> list[str]:
    store = wayline.connect(f"sqlite:///{path}")
    graph = build(store)
    config = {"configurable": {"thread_id": "refund-A7"}}
    lines = []
    out = graph.invoke({"messages": [("user", "Refund my order A7, it arrived broken")]}, config)
    for answer in (
        {"action": "feedback", "feedback": "Refund half: the customer keeps one item."},
        {"action": "approve"},
    ):
        asked = out["__interrupt__"][0].value
        lines.append(f"review: {[(c['name'], c['args']) for c in asked['calls']]}")
        lines.append(f"answer: {answer}")
        out = graph.invoke(Command(resume=answer), config)
    lines.append(f"final: {out['messages'][-1].content}")
    store.close()
    return lines


if __name__ == "__main__":
    print("\n".join(main(sys.argv[1] if len(sys.argv) > 1 else "approval_agent.db")))
