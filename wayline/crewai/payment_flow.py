"""prepare -> charge -> finalize as a CrewAI Flow, run or resumed in this process: a child
of the frameworks crash test (``wayline.demo.frameworks_crash``).

Arms: ``plain`` is CrewAI's documented ``@persist`` (its default SQLite persistence), resumed
with ``kickoff(inputs={"id": ...})``, charging through a tool with no key; ``wayline`` is
``WaylineFlowPersistence`` resumed with ``kickoff_on_wayline``, the charge tool wrapped by
``ledgered`` (derived key passed to the provider, ``idempotent=True``).

``python -m wayline.crewai.payment_flow --arm plain|wayline --dir D --service URL
[--point P --marker M] [--resume] [--worker] --out report.json`` (``--worker``: a
``CrewAIWorker`` claims the queued run instead, as ``enqueue_flow`` queued it)
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai.flow.flow import Flow, listen, start
from crewai.flow.persistence import SQLiteFlowPersistence, persist
from crewai.flow.persistence.base import FlowPersistence
from crewai.tools import BaseTool
from pydantic import BaseModel

from wayline.crewai.persistence import WaylineFlowPersistence, kickoff_on_wayline
from wayline.crewai.tools import ledgered
from wayline.crewai.worker import CrewAIWorker
from wayline.demo.payment_flow import KillSwitch, post_charge

RUN_ID = "order-7"


class PayState(BaseModel):
    id: str = ""
    amount: int = 0
    customer: str = "cus_7"
    charge_id: str = ""
    receipt: str = ""


def build(arm: str, service: str, at: Any, persistence: FlowPersistence) -> Flow[PayState]:
    class ChargeTool(BaseTool):
        name: str = "charge_card"
        description: str = "Charge the customer's card."

        def _run(self, amount: int, customer: str, key: str | None = None) -> dict[str, Any]:
            at("before_charge")
            return post_charge(service, amount, customer, key)

    @persist(persistence)
    class Payment(Flow[PayState]):
        @start()
        def prepare(self) -> None:
            self.state.amount = 4200

        @listen(prepare)
        def charge(self) -> None:
            tool: BaseTool = ChargeTool()
            if arm == "wayline":
                tool = ledgered(tool, self, idempotent=True, pass_key="key")
            result = tool.run(amount=self.state.amount, customer=self.state.customer)
            at("after_record")
            self.state.charge_id = str(result["id"])

        @listen(charge)
        def finalize(self) -> str:
            at("after_commit")
            receipt = f"{RUN_ID} paid by {self.state.charge_id}"
            self.state.receipt = receipt
            return receipt

    return Payment()


def factory(service: str, at: Any) -> Any:
    """The wayline arm's flow as a worker builds it (``persistence=`` the worker's)."""

    def make(*, persistence: FlowPersistence) -> Flow[PayState]:
        return build("wayline", service, at, persistence)

    return make


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
    p.add_argument("--worker", action="store_true", help="claim the queued run as a worker")
    args = p.parse_args()
    hook = KillSwitch(args.point, args.marker, args.service) if args.point else None

    def at(where: str) -> None:
        if hook is not None:
            hook(where)

    d = Path(args.dir)
    if args.arm == "plain":
        flow = build("plain", args.service, at, SQLiteFlowPersistence(str(d / "crewai.db")))
        result = flow.kickoff(inputs={"id": RUN_ID})
    else:
        url = args.url or f"sqlite:///{d / 'runs.db'}"
        if args.worker:
            wp = WaylineFlowPersistence(url, lease_seconds=2.0)
            outcome = CrewAIWorker(wp, [factory(args.service, at)]).run_once()
            result = outcome.result if outcome is not None else None
        else:
            wp = WaylineFlowPersistence(url, steal=True, lease_seconds=2.0)
            flow = build("wayline", args.service, at, wp)
            result = kickoff_on_wayline(flow, RUN_ID)
    if args.out:
        Path(args.out).write_text(json.dumps({"result": result}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
