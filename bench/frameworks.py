"""Step throughput of the framework integrations, side by side in one run on one machine.

- LlamaIndex: a 101-step workflow (a start step, then one step looping on itself 100 times)
  on LlamaIndex's ``BasicRuntime`` (no durability: the ceiling), on ``WaylineRuntime``
  (SQLite file) and on ``llama-agents-dbos``'s ``DBOSRuntime`` (SQLite file).
- CrewAI: a flow of 50 chained methods, ``@persist`` with no backend (``persist`` off: the
  ceiling), with CrewAI's ``SQLiteFlowPersistence``, and with ``WaylineFlowPersistence``
  (SQLite file).

Each arm runs in its own process (DBOS is a process-wide singleton), alternating arms for
``--rounds`` rounds; a process times ``--runs`` runs after one warm-up run. Prints steps per
second (median of the rounds) and each arm's ratio to the durable baseline, and writes
``bench/results/frameworks.json``.

    python bench/frameworks.py [--rounds 3] [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent

LI_ARMS = ("basic", "wayline", "dbos")
CREW_ARMS = ("none", "crewai-sqlite", "wayline")
LI_STEPS = 100
CREW_METHODS = 50


# -- LlamaIndex -------------------------------------------------------------------------


class Tick(Event):
    n: int


class Loop(Workflow):
    """Module-level: DBOS pickles step outputs, and pickle needs an importable class."""

    @step
    async def begin(self, ev: StartEvent) -> Tick:
        return Tick(n=0)

    @step
    async def loop(self, ev: Tick) -> Tick | StopEvent:
        if ev.n + 1 >= LI_STEPS:
            return StopEvent(result=ev.n + 1)
        return Tick(n=ev.n + 1)


class S(BaseModel):
    """The CrewAI chain's state (module-level: CrewAI resolves the state class by name)."""

    id: str = ""
    k: int = 0


def li_child(arm: str, workdir: Path, runs: int, steps: int) -> dict[str, Any]:
    assert steps == LI_STEPS

    async def main() -> list[float]:
        times: list[float] = []
        if arm == "basic":
            wf = Loop(timeout=600)

            async def one(i: int) -> Any:
                return await wf.run(run_id=f"r{i}")

        elif arm == "wayline":
            from wayline.llamaindex import WaylineRuntime

            rt = WaylineRuntime(f"sqlite:///{workdir / 'wayline.db'}")
            wf = Loop(runtime=rt, timeout=600)

            async def one(i: int) -> Any:
                return (await rt.run(wf, f"r{i}")).result

        else:
            from dbos import DBOS
            from llama_agents.dbos import DBOSRuntime  # type: ignore[import-untyped]

            DBOS(
                config={"name": "bench", "system_database_url": f"sqlite:///{workdir / 'dbos.db'}"}
            )
            drt = DBOSRuntime()
            wf = Loop(runtime=drt, timeout=600)
            await drt.launch()

            async def one(i: int) -> Any:
                return await wf.run(run_id=f"r{i}")

        assert await one(-1) == steps  # warm-up
        for i in range(runs):
            t0 = time.perf_counter()
            assert await one(i) == steps
            times.append(time.perf_counter() - t0)
        if arm == "dbos":
            await drt.destroy()
        return times

    times = asyncio.run(main())
    return {"arm": arm, "seconds": times, "steps": steps + 1}


# -- CrewAI -----------------------------------------------------------------------------


def crew_child(arm: str, workdir: Path, runs: int, methods: int) -> dict[str, Any]:
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")
    from crewai.flow.flow import Flow, listen, start
    from crewai.flow.persistence import SQLiteFlowPersistence, persist

    from wayline.crewai import WaylineFlowPersistence, kickoff_on_wayline

    def make(persistence: Any) -> Any:
        """The chain written out as source: CrewAI's metaclass reads the class body."""
        lines = [
            "class Chain(Flow[S]):",
            "    @start()",
            "    def m0(self):",
            "        self.state.k = 0",
        ]
        for i in range(1, methods):
            lines += [
                f"    @listen('m{i - 1}')",
                f"    def m{i}(self):",
                f"        self.state.k = {i}",
            ]
        ns: dict[str, Any] = {"Flow": Flow, "S": S, "start": start, "listen": listen}
        ns["__name__"] = __name__
        exec("\n".join(lines), ns)
        cls = ns["Chain"]
        return persist(persistence)(cls) if persistence is not None else cls

    wp = WaylineFlowPersistence(f"sqlite:///{workdir / 'wayline.db'}")
    backend = {"none": None, "crewai-sqlite": SQLiteFlowPersistence(str(workdir / "crew.db")),
               "wayline": wp}[arm]  # fmt: skip
    cls = make(backend)

    def one(i: int) -> None:
        flow = cls()
        if arm == "wayline":
            kickoff_on_wayline(flow, f"f{i}-{arm}")
        else:
            flow.kickoff(inputs={"id": f"f{i}-{arm}"})
        assert flow.state.k == methods - 1

    one(-1)
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        one(i)
        times.append(time.perf_counter() - t0)
    return {"arm": arm, "seconds": times, "steps": methods}


# -- the parent -------------------------------------------------------------------------


def run_arm(kind: str, arm: str, runs: int, size: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="wayline-fw-bench-") as d:
        out = subprocess.run(
            [sys.executable, __file__, "child", kind, arm, d, str(runs), str(size)],
            capture_output=True,
            text=True,
            check=False,
            timeout=1800,
        )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {arm} failed: {out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        kind, arm, d, n_runs, n_size = sys.argv[2:7]
        fn = li_child if kind == "llamaindex" else crew_child
        print(json.dumps(fn(arm, Path(d), int(n_runs), int(n_size))))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one round, one run per arm")
    args = p.parse_args()
    rounds, runs = (1, 1) if args.quick else (args.rounds, args.runs)
    from rich.console import Console
    from rich.table import Table

    console = Console()
    report: dict[str, Any] = {"rounds": rounds, "runs": runs, "results": {}}
    for kind, arms, size, base in (
        ("llamaindex", LI_ARMS, LI_STEPS, "dbos"),
        ("crewai", CREW_ARMS, CREW_METHODS, "crewai-sqlite"),
    ):
        rates: dict[str, list[float]] = {a: [] for a in arms}
        for r in range(rounds):
            for arm in arms:
                res = run_arm(kind, arm, runs, size)
                rate = statistics.median(res["steps"] / s for s in res["seconds"])
                rates[arm].append(rate)
                console.print(f"{kind} {arm} round {r}: {rate:,.0f} steps/s")
        report["results"][kind] = rates
        table = Table(title=f"{kind}: steps per second (median of {rounds} rounds)")
        table.add_column("arm")
        table.add_column("steps/s", justify="right")
        table.add_column(f"x {base}", justify="right")
        med = {a: statistics.median(v) for a, v in rates.items()}
        for arm in arms:
            table.add_row(arm, f"{med[arm]:,.0f}", f"{med[arm] / med[base]:.2f}")
        console.print(table)
    out = Path(__file__).parent / "results" / "frameworks.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
