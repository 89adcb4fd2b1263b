"""The prebuilt agent: create_react_agent with tools, a system prompt and a checkpointer,
over two turns of one thread (a fake chat model that accepts bind_tools)."""

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent


class ToolCallingFake(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


@tool
def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"It is sunny in {city}."


def main(checkpointer):
    model = ToolCallingFake(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "get_weather", "args": {"city": "sf"}, "id": "1"}]
                ),
                AIMessage("Sunny in SF."),
                AIMessage("You asked about SF."),
            ]
        )
    )
    agent = create_react_agent(
        model, [get_weather], prompt="You are terse.", checkpointer=checkpointer
    )
    config = {"configurable": {"thread_id": "ra"}}
    first = agent.invoke({"messages": [("user", "weather in sf?")]}, config)
    second = agent.invoke({"messages": [("user", "what did I ask?")]}, config)
    return [first, second, agent.get_state(config).next]
