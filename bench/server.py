"""HTTP serving: concurrent ``langgraph-sdk`` streaming clients against ``wayline serve``
and, in the same run, against LangGraph's own local server (``langgraph dev``).

    python bench/server.py [--quick] [--clients 8] [--runs 25] [--steps 10]
                           [--langgraph PATH/TO/langgraph] [--durability sync] [--chat]

Each server runs as a subprocess on a free loopback port and serves the same graph: one
trivial node looping on itself for ``--steps`` node steps, appending a ~100-byte item to a
list each step. C async clients (one ``get_client`` each) each run R runs one after another:
create a thread, then ``runs.stream(..., stream_mode="values")`` until the stream closes.
Measured per run, from just before the stream request: time to the first ``values`` event
(the input state, as both servers send it first) and time to the stream's end (the run has
finished). Throughput: all runs over the wall time from the first request to the last end.

Both execute up to ``--workers`` runs at a time (``langgraph dev --n-jobs-per-worker``).
wayline is measured twice: its in-process workers (``wayline serve --workers N``), and
``wayline serve --workers 0`` beside one ``wayline worker --concurrency N`` process on the
same file, whose commits wake the server's streams by datagram (``?announce=1``,
``wayline.store.wake``) and whose slots a start wakes the same way (so the GIL of the
server's process is not shared with the execution).
What differs, on purpose: ``wayline serve`` (``--workers 4`` in-process workers, SQLite file,
``synchronous=FULL``, durability sync by default) commits every step to disk before the next
starts, and its streams follow the committed steps in the store; ``langgraph dev`` keeps
everything in memory (its dev server: no durability at all). LangGraph's server is found as
``--langgraph``, else ``langgraph`` on PATH, else /work/lgsrv-venv/bin/langgraph; it installs
with ``pip install "langgraph-cli[inmem]"`` (into its own virtual environment is best). When
it is missing, only wayline is measured.

``--chat``: time to first token instead. Both serve one node calling LangChain's
``GenericFakeChatModel`` (a 40-word reply, 79 tokens, no delay of its own: what is measured
is the servers' path from a token to the client); each client streams
``stream_mode="messages-tuple"`` and the first sample is the first ``messages`` event. On
wayline the worker records each token (appended to the store at most every 20 ms, the first
at once) and the stream reads them back from the store.

Writes bench/results/server.json (``server_chat.json`` with ``--chat``): every sample, the
settings, versions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common as c
import httpx
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).parent
ROOT = HERE.parent
console = Console()

LANGGRAPH_GRAPH = """
import operator
from typing import Annotated, TypedDict
from langgraph.graph import StateGraph, START, END

class State(TypedDict, total=False):
    log: Annotated[list, operator.add]
    n: int
    steps: int

def tick(s):
    return {"log": ["x" * 100], "n": s.get("n", 0) + 1}

g = StateGraph(State)
g.add_node("tick", tick)
g.add_edge(START, "tick")
g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s["steps"] else END)
graph = g.compile()

from typing import Any
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import add_messages

REPLY = " ".join(f"word{i}" for i in range(40))

class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]

def answer(s):
    model = GenericFakeChatModel(messages=iter([AIMessage(REPLY)]))
    return {"messages": [model.invoke(s["messages"])]}

c = StateGraph(Chat)
c.add_node("model", answer)
c.add_edge(START, "model")
c.add_edge("model", END)
chat = c.compile()
"""


def wait_ok(url: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server at {url} exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/ok", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server at {url} did not start in {timeout}s")


def start_wayline(tmp: Path, workers: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    port = c.free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), *sys.path])}
    cmd = [
        sys.executable, "-m", "wayline.cli.main", "serve", "bench=server_graph.py:graph",
        "chat=server_graph.py:chat",
        "--db", f"sqlite:///{tmp / 'serve.db'}", "--port", str(port), "--dev",
        "--workers", str(workers),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    wait_ok(url, proc)
    return url, [proc]


def start_wayline_split(tmp: Path, workers: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """``wayline serve --workers 0`` and one ``wayline worker`` process beside it on the same
    file, the worker's commits announced (``?announce=1``: datagrams, ``wayline.store.wake``)."""
    db = f"sqlite:///{tmp / 'split.db'}"
    port = c.free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), *sys.path])}
    serve = [
        sys.executable, "-m", "wayline.cli.main", "serve", "bench=server_graph.py:graph",
        "chat=server_graph.py:chat", "--db", db, "--port", str(port), "--dev", "--workers", "0",
    ]  # fmt: skip
    proc = subprocess.Popen(
        serve, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    wait_ok(url, proc)
    worker = [
        sys.executable, "-m", "wayline.cli.main", "worker", "server_graph.py:graph",
        "server_graph.py:chat", "--db", db + "?announce=1", "--concurrency", str(workers),
    ]  # fmt: skip
    child = subprocess.Popen(
        worker, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wake = Path(str((tmp / "split.db").resolve()) + "-wayline-wake")
    deadline = time.monotonic() + 60
    while not list(wake.glob("work-*")):  # the worker listens: a start wakes it at once
        if child.poll() is not None or time.monotonic() > deadline:
            proc.terminate()
            child.kill()
            raise RuntimeError("the wayline worker beside the server did not start")
        time.sleep(0.1)
    return url, [child, proc]


def find_langgraph(given: str | None) -> str | None:
    for candidate in (given, shutil.which("langgraph"), "/work/lgsrv-venv/bin/langgraph"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def start_langgraph(binary: str, tmp: Path, jobs: int) -> tuple[str, list[subprocess.Popen[bytes]]]:
    project = tmp / "lg"
    project.mkdir()
    (project / "graph.py").write_text(LANGGRAPH_GRAPH)
    (project / "langgraph.json").write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"bench": "./graph.py:graph", "chat": "./graph.py:chat"},
            }
        )
    )
    port = c.free_port()
    cmd = [binary, "dev", "--no-browser", "--no-reload", "--config", "langgraph.json",
           "--port", str(port), "--n-jobs-per-worker", str(jobs)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        cmd, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    wait_ok(url, proc)
    return url, [proc]


async def one_client(
    url: str, runs: int, steps: int, durability: str | None
) -> list[dict[str, Any]]:
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None, timeout=120.0)
    samples = []
    for _ in range(runs):
        thread = await client.threads.create()
        start = time.perf_counter()
        first = None
        extra: dict[str, Any] = {"durability": durability} if durability else {}
        values = 0
        async for part in client.runs.stream(
            thread["thread_id"], "bench", input={"n": 0, "steps": steps, "log": []},
            stream_mode="values", **extra,
        ):  # fmt: skip
            if part.event == "values":
                values += 1
                if first is None:
                    first = time.perf_counter() - start
        done = time.perf_counter() - start
        if values != steps + 1:
            raise RuntimeError(f"expected {steps + 1} values events, got {values}")
        samples.append({"first_event_s": first, "complete_s": done})
    return samples


async def one_chat(url: str, runs: int, steps: int, durability: str | None) -> list[dict[str, Any]]:
    """A chat client: each run one user message, streamed as ``messages-tuple``."""
    from langgraph_sdk import get_client

    client = get_client(url=url, api_key=None, timeout=120.0)
    samples = []
    hi: Any = {"messages": [{"role": "user", "content": "hi"}]}
    for _ in range(runs):
        thread = await client.threads.create()
        start = time.perf_counter()
        first = None
        text = []
        async for part in client.runs.stream(
            thread["thread_id"], "chat", input=hi, stream_mode="messages-tuple",
        ):  # fmt: skip
            if part.event == "messages":
                text.append(part.data[0]["content"])
                if first is None:
                    first = time.perf_counter() - start
        done = time.perf_counter() - start
        if "".join(text) != " ".join(f"word{i}" for i in range(40)):
            raise RuntimeError(f"the tokens did not add up to the reply: {''.join(text)!r}")
        samples.append({"first_event_s": first, "complete_s": done, "tokens": len(text)})
    return samples


async def load(
    url: str, clients: int, runs: int, steps: int, durability: str | None, chat: bool = False
) -> dict[str, Any]:
    client = one_chat if chat else one_client
    await client(url, 1, steps, durability)  # warm up (imports, first thread)
    start = time.perf_counter()
    per_client = await asyncio.gather(
        *(client(url, runs, steps, durability) for _ in range(clients))
    )
    wall = time.perf_counter() - start
    samples = [s for each in per_client for s in each]
    return {"wall_s": wall, "runs": len(samples), "samples": samples}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def summarize(result: dict[str, Any]) -> dict[str, float]:
    """Runs/s of the median round; percentiles over every round's samples."""
    first = [s["first_event_s"] * 1000 for s in result["samples"]]
    done = [s["complete_s"] * 1000 for s in result["samples"]]
    return {
        "runs_per_s": statistics.median(result["rounds_runs_per_s"]),
        "first_p50_ms": statistics.median(first),
        "first_p99_ms": pct(first, 99),
        "done_p50_ms": statistics.median(done),
        "done_p99_ms": pct(done, 99),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 clients x 5 runs")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--runs", type=int, default=25, help="runs per client")
    ap.add_argument("--steps", type=int, default=10, help="node steps per run")
    ap.add_argument(
        "--workers", type=int, default=4,
        help="wayline serve --workers, and langgraph dev --n-jobs-per-worker",
    )  # fmt: skip
    ap.add_argument("--durability", default=None, help="sync (default), async or exit")
    ap.add_argument("--langgraph", default=None, help="path to the langgraph CLI")
    ap.add_argument("--chat", action="store_true", help="time to first token of a chat model")
    ap.add_argument(
        "--rounds", type=int, default=3,
        help="loads per server, alternating between the servers (runs/s: the median round)",
    )  # fmt: skip
    args = ap.parse_args()
    if args.quick:
        args.clients, args.runs, args.rounds = 4, 5, 1

    results: dict[str, Any] = {}
    rounds: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="wayline-bench-server-") as tmpdir:
        tmp = Path(tmpdir)
        servers: list[tuple[str, Callable[[], tuple[str, list[subprocess.Popen[bytes]]]]]] = [
            ("wayline serve", lambda: start_wayline(tmp, args.workers)),
            ("serve + worker process", lambda: start_wayline_split(tmp, args.workers)),
        ]
        lg = find_langgraph(args.langgraph)
        if lg is not None:
            servers.append(("langgraph dev", lambda: start_langgraph(lg, tmp, args.workers)))
        else:
            console.print("langgraph dev not found: measuring wayline only")
        running: dict[str, tuple[str, list[subprocess.Popen[bytes]]]] = {}
        try:
            for name, starter in servers:  # all up first: the loads alternate between them
                running[name] = starter()  # (each load warms its server up first)
            names = list(running)
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    url = running[name][0]
                    durability = args.durability if name != "langgraph dev" else None
                    got = asyncio.run(
                        load(url, args.clients, args.runs, args.steps, durability, args.chat)
                    )
                    rounds.setdefault(name, []).append(got)
                    rate = got["runs"] / got["wall_s"]
                    console.print(f"round {r + 1}, {name} at {url}: {rate:.1f} runs/s")
        finally:
            for _, procs in running.values():
                for proc in procs:
                    proc.terminate()
                    proc.wait(30)
    for name, each in rounds.items():
        results[name] = {
            "wall_s": sum(x["wall_s"] for x in each),
            "runs": sum(x["runs"] for x in each),
            "samples": [sample for x in each for sample in x["samples"]],
            "rounds_runs_per_s": [x["runs"] / x["wall_s"] for x in each],
        }

    what = "chats (first token)" if args.chat else f"runs, {args.steps} steps"
    table = Table(title=f"{args.clients} streaming clients x {args.runs} {what}")
    first_col = "first token p50" if args.chat else "first event p50"
    for col in ("server", "runs/s", first_col, "p99", "complete p50", "p99"):
        table.add_column(col, justify="right", no_wrap=col == "server")
    summaries = {name: summarize(r) for name, r in results.items()}
    for name, s in summaries.items():
        table.add_row(
            name,
            f"{s['runs_per_s']:.1f}",
            f"{s['first_p50_ms']:.1f} ms",
            f"{s['first_p99_ms']:.1f} ms",
            f"{s['done_p50_ms']:.1f} ms",
            f"{s['done_p99_ms']:.1f} ms",
        )
    console.print(table)
    g = summaries.get("langgraph dev")
    for name, w in summaries.items():
        if g is None or name == "langgraph dev":
            continue
        console.print(
            f"{name} / langgraph dev: runs/s {w['runs_per_s'] / g['runs_per_s']:.2f}x "
            f"(goal >= 3x), first p50 {w['first_p50_ms'] / g['first_p50_ms']:.2f}x, "
            f"p99 {w['first_p99_ms'] / g['first_p99_ms']:.2f}x; its own first-event "
            f"p99/p50 {w['first_p99_ms'] / w['first_p50_ms']:.2f} (goal <= 2)"
        )
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / ("server_chat.json" if args.chat else "server.json")).write_text(
        json.dumps(
            {
                "settings": vars(args),
                "summaries": summaries,
                "results": results,
                "python": platform.python_version(),
                "langgraph_cli": lg,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
