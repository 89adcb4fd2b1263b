"""``@task(cache_policy=CachePolicy())`` with ``@entrypoint(cache=InMemoryCache())``: a
call on arguments seen before (in this run or another thread's) reuses the result instead
of running, streamed with ``"__metadata__": {"cached": True}``; a resume replays the
recorded result either way; ``task.clear_cache(graph.cache)`` forgets the task's results."""

from langgraph.cache.memory import InMemoryCache
from langgraph.func import entrypoint, task
from langgraph.types import CachePolicy, Command, interrupt


def main(checkpointer):
    calls = []

    @task(cache_policy=CachePolicy())
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    @task
    def plain(x: int) -> int:
        calls.append(-x)
        return x

    @entrypoint(checkpointer=checkpointer, cache=InMemoryCache())
    def graph(x: int) -> list:
        first = double(x).result()
        answer = interrupt("go?")
        return [first, double(x).result(), double(x + 1).result(), plain(x).result(), answer]

    seen = []
    for thread in ("1", "2"):
        config = {"configurable": {"thread_id": thread}}
        seen.append([c for c in graph.stream(1, config) if "__interrupt__" not in c])
        seen.append(list(graph.stream(Command(resume="yes"), config)))
        seen.append(list(calls))
    double.clear_cache(graph.cache)
    config = {"configurable": {"thread_id": "3"}}
    graph.invoke(1, config)
    seen.append((graph.invoke(Command(resume="again"), config), list(calls)))
    return seen
