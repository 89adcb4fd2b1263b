"""A three-step LlamaIndex workflow on ``WaylineRuntime``, run (or resumed) in this process;
each step appends its name to ``--log``; ``--kill-in STEP`` SIGKILLs the process inside that
step. The child of tests/integration/test_llamaindex.py's fresh-process resume."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

from wayline.llamaindex import WaylineRuntime


class Counted(Event):
    n: int


class Doubled(Event):
    n: int


def build(log: str, kill_in: str | None, runtime: WaylineRuntime) -> Workflow:
    def note(name: str) -> None:
        with open(log, "a") as f:
            f.write(name + "\n")
            f.flush()
            os.fsync(f.fileno())
        if kill_in == name:
            os.kill(os.getpid(), signal.SIGKILL)

    class Steps(Workflow):
        @step
        async def count(self, ctx: Context, ev: StartEvent) -> Counted:
            note("count")
            await ctx.store.set("seen", "count")
            return Counted(n=int(ev.get("n", 0)) + 1)

        @step
        async def double(self, ev: Counted) -> Doubled:
            note("double")
            return Doubled(n=ev.n * 2)

        @step
        async def finish(self, ctx: Context, ev: Doubled) -> StopEvent:
            note("finish")
            return StopEvent(result={"n": ev.n, "seen": await ctx.store.get("seen")})

    return Steps(runtime=runtime, timeout=60)


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--kill-in")
    p.add_argument("--out")
    args = p.parse_args()
    rt = WaylineRuntime(args.url)
    outcome = await rt.run(build(args.log, args.kill_in, rt), "steps-1", steal=True, n=20)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"status": outcome.status, "result": outcome.result}, f)


if __name__ == "__main__":
    asyncio.run(main())
