"""Interrupts inside @task functions: each task asks in its own scope, so an answer goes
to the question it answers however many tasks finished (and were skipped) before it;
a task calling a task."""

from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt


def main(checkpointer):
    runs = []

    @task
    def ask(question: str) -> str:
        runs.append(question)
        return interrupt(question)

    @task
    def shout(text: str) -> str:
        runs.append(text)
        return text.upper()

    @task
    def pipeline(text: str) -> str:
        return shout(text).result() + "!"

    @entrypoint(checkpointer=checkpointer)
    def flow(topic: str):
        a = ask(f"first {topic}?").result()
        b = pipeline(a).result()
        c = ask(f"second {topic}?").result()
        return [a, b, c]

    config = {"configurable": {"thread_id": "ti"}}
    seen = [flow.invoke("owls", config)]
    seen.append(flow.invoke(Command(resume="x"), config))
    seen.append(flow.invoke(Command(resume="y"), config))
    seen.append(runs)
    seen.append(flow.get_state(config).values)
    return seen
