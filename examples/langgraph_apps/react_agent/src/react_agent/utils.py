"""Utility & helper functions.

wayline: ``load_chat_model`` returns a scripted fake chat model built on langchain-core's
``GenericFakeChatModel`` (no provider, no network); the rest is the template's.
"""

import itertools

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage


def get_message_text(msg: BaseMessage) -> str:
    """Get the text content of a message."""
    content = msg.content
    if isinstance(content, str):
        return content
    elif isinstance(content, dict):
        return content.get("text", "")
    else:
        txts = [c if isinstance(c, str) else (c.get("text") or "") for c in content]
        return "".join(txts).strip()


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """langchain-core's fake chat model, answering from its script whatever tools it has."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def, override]
        return self


SCRIPT = [
    AIMessage(
        content="",
        tool_calls=[{"name": "search", "args": {"query": "wayline"}, "id": "call_search_1"}],
    ),
    AIMessage(content="wayline is a durable execution runtime for agent graphs."),
]
"""Each conversation turn: a search, then the answer (cycled, turn after turn)."""

_MODEL = ToolCallingFakeChatModel(messages=(m.model_copy() for m in itertools.cycle(SCRIPT)))


def load_chat_model(fully_specified_name: str) -> BaseChatModel:
    """Load a chat model from a fully specified name.

    Args:
        fully_specified_name (str): String in the format 'provider/model'.
    """
    provider, model = fully_specified_name.split("/", maxsplit=1)
    return _MODEL
