"""The chatbot tutorial: MessagesState, one chat-model node, a thread kept across turns."""

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, RemoveMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES


def main(checkpointer):
    llm = GenericFakeChatModel(
        messages=iter([AIMessage("Hello Bob!"), AIMessage("Your name is Bob."), AIMessage("ok")])
    )

    def chatbot(state: MessagesState):
        return {"messages": [llm.invoke(state["messages"])]}

    def forget(state: MessagesState):
        if len(state["messages"]) > 3:
            first = state["messages"][0]
            return {"messages": [RemoveMessage(id=first.id)]}
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_node("forget", forget)
    builder.add_edge(START, "chatbot")
    builder.add_edge("chatbot", "forget")
    builder.add_edge("forget", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "1"}}
    seen = []
    seen.append(graph.invoke({"messages": [{"role": "user", "content": "Hi, I am Bob"}]}, config))
    for chunk in graph.stream({"messages": [("user", "What is my name?")]}, config):
        seen.append(chunk)
    seen.append(graph.get_state(config).values)
    seen.append(graph.get_state(config).next)
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]})
    seen.append(graph.get_state(config).values)
    seen.append(graph.invoke({"messages": "again"}, config))
    return seen
