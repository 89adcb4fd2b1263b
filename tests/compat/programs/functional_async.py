"""The functional API, async: an async entrypoint awaiting async tasks with
asyncio.gather, an interrupt, ainvoke and astream."""

import asyncio

from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt


def main(checkpointer):
    runs = []

    @task
    async def add(a: int, b: int) -> int:
        runs.append(a)
        return a + b

    @entrypoint(checkpointer=checkpointer)
    async def flow(n: int):
        xs = await asyncio.gather(*[add(i, 1) for i in range(n)])
        ok = interrupt({"sum": sum(xs)})
        return {"xs": list(xs), "ok": ok}

    async def go():
        config = {"configurable": {"thread_id": "a1"}}
        seen = [await flow.ainvoke(3, config)]
        seen.append([c async for c in flow.astream(Command(resume="yes"), config)])
        seen.append(sorted(runs))
        return seen

    return asyncio.run(go())
