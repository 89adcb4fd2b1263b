"""The JSON schemas ``create_react_agent``'s graph publishes for its input and output, as
LangGraph's: its state classes (``AgentState``, ``AgentStatePydantic`` and their
structured-response variants) carry LangGraph's docstrings and are marked deprecated
(``"deprecated": true``), as LangGraph 1.0 deprecated them for ``langchain.agents``."""

import json
import warnings

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentStatePydantic
from pydantic import BaseModel


class Model(FakeMessagesListChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


class Weather(BaseModel):
    """The weather in a city."""

    city: str


@tool()
def search_api(query: str) -> str:
    """Searches the API for the query."""
    return f"result for {query}"


def _schemas(**kwargs) -> list:
    model = Model(responses=[AIMessage(content="answer")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LangGraph's create_react_agent has moved
        app = create_react_agent(model, [search_api], **kwargs)
    return [
        json.loads(json.dumps(app.get_input_jsonschema())),
        json.loads(json.dumps(app.get_output_jsonschema())),
    ]


def main(checkpointer):
    return [
        ("default", _schemas()),
        ("structured", _schemas(response_format=Weather)),
        ("pydantic", _schemas(state_schema=AgentStatePydantic)),
    ]
