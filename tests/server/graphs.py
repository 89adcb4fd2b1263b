"""Graphs the server tests serve."""

from __future__ import annotations

import operator
import os
import signal
import threading
import time
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph, add_messages, get_stream_writer, interrupt
from wayline.graph.context import NodeContext


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int


def _a(s: State) -> dict[str, Any]:
    return {"items": ["a"], "n": s.get("n", 0) + 1}


def _ask(s: State) -> dict[str, Any]:
    answer = interrupt({"question": "ok?", "n": s["n"]})
    return {"items": [f"answer:{answer}"]}


def _b(s: State) -> dict[str, Any]:
    return {"items": ["b"]}


def ask() -> Any:
    g = StateGraph(State, name="ask")
    g.add_node("a", _a)
    g.add_node("ask", _ask)
    g.add_node("b", _b)
    g.add_edge(START, "a")
    g.add_edge("a", "ask")
    g.add_edge("ask", "b")
    g.add_edge("b", END)
    return g


def _chatty_a(s: State) -> dict[str, Any]:
    write = get_stream_writer()
    write({"progress": "a started"})
    write({"progress": "a done", "n": s.get("n", 0)})
    return {"items": ["a"], "n": s.get("n", 0) + 1}


def _chatty_b(s: State) -> dict[str, Any]:
    get_stream_writer()("b says hi")
    return {"items": ["b"]}


def _chatty_ask(s: State) -> dict[str, Any]:
    get_stream_writer()({"asking": s["n"]})
    answer = interrupt("go on?")
    return {"items": [f"answer:{answer}"]}


def chatty() -> Any:
    """Nodes that emit ``custom`` chunks with ``get_stream_writer()``; ``ask`` pauses after
    emitting (its step commits no delta)."""
    g = StateGraph(State, name="chatty")
    g.add_node("a", _chatty_a)
    g.add_node("b", _chatty_b)
    g.add_node("ask", _chatty_ask)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_conditional_edges("b", lambda s: "ask" if s.get("n", 0) > 1 else END, ["ask", END])
    g.add_edge("ask", END)
    return g


def simple() -> Any:
    g = StateGraph(State, name="simple")
    g.add_node("a", _a)
    g.add_node("b", _b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g


STEP_SECONDS = 0.05
HOLD = threading.Event()
"""A ``slow`` run given ``hold: True`` waits for this (set by the test) before its last tick,
so it is still running whatever the machine's load."""


def _tick(s: State) -> dict[str, Any]:
    time.sleep(STEP_SECONDS)  # a slow model call: long enough to cancel or drop off mid-run
    return {"items": [f"t{s.get('n', 0)}"], "n": s.get("n", 0) + 1}


def slow() -> Any:
    """Ticks until n reaches the input's target (n counts up from the input)."""

    class Slow(TypedDict, total=False):
        items: Annotated[list[str], operator.add]
        n: int
        until: int
        hold: bool

    def tick(s: Slow) -> dict[str, Any]:
        if s.get("hold") and s.get("n", 0) + 1 >= s.get("until", 40) and not HOLD.wait(30):
            raise TimeoutError("the test never released the held run")
        return _tick(s)

    g = StateGraph(Slow, name="slow")
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s.get("until", 40) else END)
    return g


class Refund(TypedDict, total=False):
    amount: int
    decision: dict[str, Any]
    receipt: dict[str, Any]
    items: Annotated[list[str], operator.add]


def _approve(s: Refund) -> dict[str, Any]:
    decision = interrupt({"refund": s["amount"]}, approvers=["finance"], expires_in=3600)
    return {"decision": decision}


def _pay(s: Refund, ctx: NodeContext) -> dict[str, Any]:
    receipt = ctx.effect(
        "refund",
        lambda key: {"id": f"re_{key[:8]}", "amount": s["amount"]},
        request={"amount": s["amount"]},
    )
    return {"receipt": receipt, "items": ["paid"]}


def refund() -> Any:
    g = StateGraph(Refund, name="refund")
    g.add_node("approve", _approve)
    g.add_node("pay", _pay)
    g.add_edge(START, "approve")
    g.add_conditional_edges("approve", lambda s: "pay" if s["decision"].get("approved") else END)
    g.add_edge("pay", END)
    return g


def _boom(s: State) -> dict[str, Any]:
    raise ValueError("the model refused")


def failing() -> Any:
    g = StateGraph(State, name="failing")
    g.add_node("boom", _boom)
    g.add_edge(START, "boom")
    g.add_edge("boom", END)
    return g


class Pay(TypedDict, total=False):
    amount: int
    receipt: dict[str, Any]


def _provider(key: str, amount: int) -> dict[str, Any]:
    if os.environ.get("WAYLINE_TEST_KILL_IN_CHARGE"):
        os.kill(os.getpid(), signal.SIGKILL)  # dies after dispatch, before the record
    return {"id": f"ch_{key[:8]}", "amount": amount}


def _charge(s: Pay, ctx: NodeContext) -> dict[str, Any]:
    receipt = ctx.effect(
        "charge", lambda key: _provider(key, s["amount"]), request={"amount": s["amount"]}
    )
    return {"receipt": receipt}


def pay() -> Any:
    g = StateGraph(Pay, name="pay")
    g.add_node("charge", _charge)
    g.add_edge(START, "charge")
    g.add_edge("charge", END)
    return g


class SlowPay(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int
    until: int
    amount: int
    url: str
    receipts: Annotated[list[str], operator.add]


def _charge_then(s: SlowPay, ctx: NodeContext) -> dict[str, Any]:
    from wayline.demo.payment_flow import post_charge

    charge = ctx.effect(
        "charge",
        lambda key: post_charge(s["url"], s["amount"], "cus_1", key),
        request={"amount": s["amount"]},
    )
    return {"receipts": [charge["id"]]}


def slow_pay() -> Any:
    """Charges the input's amount at the local payments service (under the effect's key),
    then ticks as ``slow`` does."""
    g = StateGraph(SlowPay, name="slow_pay")
    g.add_node("charge", _charge_then)
    g.add_node("tick", _tick)
    g.add_edge(START, "charge")
    g.add_edge("charge", "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s.get("until", 40) else END)
    return g


# -- chat graphs: a node calling a LangChain chat model (tokens for ``messages`` streams)

REPLY = "tokens arrive one by one before the node returns"
GATE = threading.Event()
"""``gated_chat`` streams two tokens, then waits for this (set by the test) to go on."""
TOKEN_SECONDS = 0.03
"""How long ``slow_chat``'s model takes per token: a worker can be killed mid-message."""


class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]


def _streamed(text: str, after_token: Any = None) -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    model = GenericFakeChatModel(messages=iter([AIMessage(text)]))
    whole: Any = None
    for i, chunk in enumerate(model.stream("hi")):
        whole = chunk if whole is None else whole + chunk
        if after_token is not None:
            after_token(i)
    return AIMessage(content=whole.content, id=whole.id)


def _chat_node(s: Chat) -> dict[str, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    model = GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))
    return {"messages": [model.invoke(s["messages"])]}


def _gated_node(s: Chat) -> dict[str, Any]:
    def pause(i: int) -> None:
        if i == 1 and not GATE.wait(20):
            raise TimeoutError("the test never opened the gate")

    return {"messages": [_streamed(REPLY, pause)]}


def _slow_node(s: Chat) -> dict[str, Any]:
    return {"messages": [_streamed(REPLY, lambda i: time.sleep(TOKEN_SECONDS))]}


def _approve_reply(s: Chat) -> dict[str, Any]:
    answer = interrupt({"question": "send this reply?"})
    return {"messages": [{"role": "user", "content": f"approved: {answer}"}]}


def _reply_then_ask(s: Chat) -> dict[str, Any]:
    reply = _streamed(REPLY)
    interrupt("send it?")  # the node runs again on resume: its model streams again
    return {"messages": [reply]}


def _one_node(name: str, fn: Any) -> Any:
    g = StateGraph(Chat, name=name)
    g.add_node("model", fn)
    g.add_edge(START, "model")
    g.add_edge("model", END)
    return g


def chat() -> Any:
    return _one_node("chat", _chat_node)


def gated_chat() -> Any:
    return _one_node("gated_chat", _gated_node)


def slow_chat() -> Any:
    return _one_node("slow_chat", _slow_node)


def reply_then_ask() -> Any:
    return _one_node("reply_then_ask", _reply_then_ask)


def approved_chat() -> Any:
    """A chat turn that asks for approval before the model answers."""
    g = StateGraph(Chat, name="approved_chat")
    g.add_node("approve", _approve_reply)
    g.add_node("model", _chat_node)
    g.add_edge(START, "approve")
    g.add_edge("approve", "model")
    g.add_edge("model", END)
    return g


def _configured(s: State, config: Any) -> dict[str, Any]:
    from wayline import get_runtime

    model = config["configurable"].get("model")
    return {"items": [f"model={model}", f"context={get_runtime().context}"]}


def configured() -> Any:
    """Says which config and context it ran with (an assistant's, or a run's)."""
    g = StateGraph(State, name="configured")
    g.add_node("say", _configured)
    g.add_edge(START, "say")
    g.add_edge("say", END)
    return g


def compiled(store: Any) -> dict[str, Any]:
    return {
        name: fn().compile(store)
        for name, fn in {
            "ask": ask,
            "simple": simple,
            "chatty": chatty,
            "slow": slow,
            "slow_pay": slow_pay,
            "refund": refund,
            "failing": failing,
            "pay": pay,
            "chat": chat,
            "gated_chat": gated_chat,
            "slow_chat": slow_chat,
            "approved_chat": approved_chat,
            "configured": configured,
            "reply_then_ask": reply_then_ask,
        }.items()
    } | _langgraph(store)


def _langgraph(store: Any) -> dict[str, Any]:
    """LangGraph's own graphs beside them (``lg_graphs``: LangGraph's engine on workers)."""
    import lg_graphs

    return lg_graphs.served_graphs(store)
