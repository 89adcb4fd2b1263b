"""create_react_agent with a pre_model_hook (the model sees llm_input_messages, the state
keeps its messages), a post_model_hook, a response_format, a callable model chosen per
call, and a custom state injected into a tool (InjectedState)."""

from typing import Annotated

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import InjectedState, create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from pydantic import BaseModel


class Weather(BaseModel):
    city: str
    sky: str


class Echo(FakeMessagesListChatModel):
    """Answers from a script and remembers what it was shown."""

    shown: list = []

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.shown.append([m.content for m in messages])
        return super()._generate(messages, stop, run_manager, **kwargs)

    def with_structured_output(self, schema, **kwargs):
        return RunnableLambda(lambda _: {"schema": schema.__name__, "sky": "snow"})


class CityState(AgentState):
    city: str


class ForecastState(CityState):
    structured_response: dict


@tool
def weather(state: Annotated[dict, InjectedState]) -> str:
    """The weather in the state's city."""
    return f"snow in {state['city']}"


def script():
    return [
        AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "w1"}]),
        AIMessage("It snows in Oslo."),
    ]


def main(checkpointer):
    seen = []
    model = Echo(responses=script())

    def pre(state):
        return {"llm_input_messages": [HumanMessage("summary: " + state["messages"][-1].content)]}

    def post(state):
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *state["messages"][-1:]]}

    agent = create_react_agent(
        model,
        [weather],
        pre_model_hook=pre,
        state_schema=CityState,
        checkpointer=checkpointer,
    )
    config = {"configurable": {"thread_id": "pre"}}
    out = agent.invoke({"messages": [HumanMessage("weather?")], "city": "Oslo"}, config)
    seen.append(sorted(out))
    seen.append([(m.type, m.content) for m in out["messages"]])
    seen.append(model.shown)

    structured = create_react_agent(
        Echo(responses=script()),
        [weather],
        state_schema=ForecastState,
        response_format=Weather,
        post_model_hook=post,
    )
    out = structured.invoke({"messages": [HumanMessage("weather?")], "city": "Oslo"})
    seen.append(out["structured_response"])
    seen.append([(m.type, m.content) for m in out["messages"]])

    picked = []

    def choose(state, runtime):
        picked.append(len(state["messages"]))
        return Echo(responses=[AIMessage(f"model {len(picked)}")])

    dynamic = create_react_agent(choose, [], prompt="be brief")
    out = dynamic.invoke({"messages": [HumanMessage("hi")]})
    seen.append([(m.type, m.content) for m in out["messages"]])
    seen.append(picked)
    return seen
