"""Cancelling a ``@task``'s future: the running async task gets ``CancelledError`` before
the entrypoint goes on, its result is neither streamed nor recorded, and a resume runs it
again (and the entrypoint cancels it again)."""

import asyncio

from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt


def main(checkpointer):
    calls, cancels = [], []

    @task
    async def mapper(n: int) -> str:
        calls.append(n)
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            cancels.append(n)
            raise
        return str(n) * 2

    @entrypoint(checkpointer=checkpointer)
    async def flow(ns: list[int]) -> list[str]:
        futures = [mapper(n) for n in ns]
        await asyncio.sleep(0.1)
        cancelled = futures.pop().cancel()
        mapped = await asyncio.gather(*futures)
        answer = interrupt({"cancelled": cancelled, "seen": list(cancels)})
        return [m + answer for m in mapped]

    async def go():
        config = {"configurable": {"thread_id": "c1"}}
        seen = [[c async for c in flow.astream([0, 1], config)]]
        seen.append((sorted(calls), list(cancels)))
        seen.append(await flow.ainvoke(Command(resume="!"), config))
        seen.append((sorted(calls), list(cancels)))
        return seen

    return asyncio.run(go())
