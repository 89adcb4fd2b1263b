"""The agent's former module; ``create_react_agent`` lives in ``chat_agent_executor``,
LangGraph's module name, where ported imports find it."""

from wayline.prebuilt.chat_agent_executor import create_react_agent

__all__ = ["create_react_agent"]
