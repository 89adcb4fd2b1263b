"""prepare -> charge -> finalize as a LlamaIndex workflow, run or resumed in this process:
a child of the frameworks crash test (``wayline.demo.frameworks_crash``).

Arms: ``plain`` is LlamaIndex's documented durability, the snapshot loop (the context
saved with ``Context.to_dict()`` as each step ends, resumed with ``Context.from_dict``),
charging with no key; ``wayline`` is ``WaylineRuntime`` with the charge through
``wayline.llamaindex.effect`` (derived key, ``idempotent=True``).

``python -m wayline.llamaindex.payment_flow --arm plain|wayline --dir D --service URL
[--point P --marker M] [--resume] --out report.json``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StepStateChanged, StopEvent

from wayline.demo.payment_flow import KillSwitch, post_charge
from wayline.llamaindex.effects import effect
from wayline.llamaindex.runtime import WaylineRuntime

RUN_ID = "order-7"
SNAPSHOT_WAIT_S = 10.0


class Prepared(Event):
    amount: int
    customer: str


class Charged(Event):
    charge_id: str
    deduplicated: bool


def build(arm: str, service: str, at: Any, snapshot: Path, runtime: Any = None) -> Workflow:
    class Payment(Workflow):
        @step
        async def prepare(self, ev: StartEvent) -> Prepared:
            return Prepared(amount=4200, customer=str(ev.get("customer", "cus_7")))

        @step
        async def charge(self, ctx: Context, ev: Prepared) -> Charged:
            def send(key: str | None) -> dict[str, Any]:
                at("before_charge")
                return post_charge(service, ev.amount, ev.customer, key)

            if arm == "plain":
                result = send(None)
            else:
                request = {"amount": ev.amount, "customer": ev.customer}
                result = effect(ctx, "charge", send, request=request, idempotent=True)
            at("after_record")
            return Charged(charge_id=result["id"], deduplicated=bool(result["deduplicated"]))

        @step
        async def finalize(self, ev: Charged) -> StopEvent:
            if arm == "plain":  # "the record" is the snapshot the loop writes as charge ends
                _wait_for(snapshot, "charge")
            at("after_commit")
            return StopEvent(result={"receipt": f"{RUN_ID} paid by {ev.charge_id}"})

    kw: dict[str, Any] = {"timeout": 60}
    if runtime is not None:
        kw["runtime"] = runtime
    return Payment(**kw)


def _wait_for(snapshot: Path, step_name: str) -> None:
    deadline = time.monotonic() + SNAPSHOT_WAIT_S
    done = snapshot.with_suffix(".steps")
    while time.monotonic() < deadline:
        if done.exists() and step_name in done.read_text().split():
            return
        time.sleep(0.005)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


async def run_plain(service: str, at: Any, d: Path, resume: bool) -> Any:
    """LlamaIndex's documented loop: snapshot the context each time a step ends."""
    snapshot = d / "snapshot.json"
    wf = build("plain", service, at, snapshot)
    if resume and snapshot.exists():
        ctx = Context.from_dict(wf, json.loads(snapshot.read_text()))
        handler = wf.run(ctx=ctx)
    else:
        handler = wf.run(customer="cus_7")
    done: list[str] = []
    async for ev in handler.stream_events(expose_internal=True):
        if isinstance(ev, StepStateChanged) and ev.step_state.value == "not_running":
            assert handler.ctx is not None
            _write_atomic(snapshot, json.dumps(handler.ctx.to_dict()))
            done.append(ev.name)
            _write_atomic(snapshot.with_suffix(".steps"), " ".join(done))
    return await handler


async def run_wayline(service: str, at: Any, d: Path, url: str | None) -> Any:
    rt = WaylineRuntime(url or f"sqlite:///{d / 'runs.db'}", lease_seconds=2.0)
    wf = build("wayline", service, at, d / "unused", runtime=rt)
    outcome = await rt.run(wf, RUN_ID, steal=True, customer="cus_7")
    effects = [
        {"status": e.status, "attempt": e.attempt} for e in rt.store.list_effects("default", RUN_ID)
    ]
    return {"result": outcome.result, "effects": effects}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--arm", choices=["plain", "wayline"], required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--point")
    p.add_argument("--marker")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out")
    p.add_argument("--url", help="the wayline store (default: runs.db in --dir)")
    args = p.parse_args()
    hook = KillSwitch(args.point, args.marker, args.service) if args.point else None

    def at(where: str) -> None:
        if hook is not None:
            hook(where)

    d = Path(args.dir)
    if args.arm == "plain":
        result = asyncio.run(run_plain(args.service, at, d, args.resume))
    else:
        result = asyncio.run(run_wayline(args.service, at, d, args.url))
    if args.out:
        Path(args.out).write_text(json.dumps({"result": result}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
