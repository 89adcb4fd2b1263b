"""The graph ``bench/chat_ui.py`` serves to agent-chat-ui: a chat model streams a reply
(slowly enough that a browser shows tokens before the node returns), then the reply waits
for a person's approval in the agent-inbox shape agent-chat-ui renders (``action_requests``
and ``review_configs``), and the approval is answered."""

from __future__ import annotations

import time
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph, add_messages, interrupt

REPLY = " ".join(f"token{i}" for i in range(60))
TOKEN_SECONDS = 0.05


class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]


def model(s: Chat) -> dict[str, Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    fake = GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))
    whole: Any = None
    for chunk in fake.stream(s["messages"]):
        whole = chunk if whole is None else whole + chunk
        time.sleep(TOKEN_SECONDS)  # a real model's pace: the browser shows tokens arriving
    return {"messages": [AIMessage(content=whole.content, id=whole.id)]}


def approve(s: Chat) -> dict[str, Any]:
    answer = interrupt(
        {
            "action_requests": [
                {"name": "send_reply", "args": {"to": "customer"}, "description": "Send it?"}
            ],
            "review_configs": [
                {"action_name": "send_reply", "allowed_decisions": ["approve", "reject"]}
            ],
        }
    )
    decisions = answer.get("decisions", []) if isinstance(answer, dict) else []
    verdict = decisions[0].get("type") if decisions else "none"
    said = {"approve": "approved: sent", "reject": "rejected: not sent"}.get(verdict, verdict)
    return {"messages": [{"role": "ai", "content": f"reply {said}"}]}


g = StateGraph(Chat, name="agent")
g.add_node("model", model)
g.add_node("approve", approve)
g.add_edge(START, "model")
g.add_edge("model", "approve")
g.add_edge("approve", END)
graph = g
