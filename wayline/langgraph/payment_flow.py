"""prepare -> charge -> finalize as a LangGraph graph, run or resumed in this process: a
child of the frameworks crash test (``wayline.demo.frameworks_crash``).

Arms: ``plain`` is LangGraph's own SQLite checkpointer (``langgraph-checkpoint-sqlite``),
durability ``sync``, charging with no key; ``wayline`` is ``WaylineSaver`` with the charge
through ``wayline.langgraph.effect`` (derived key, ``idempotent=True``).

``python -m wayline.langgraph.payment_flow --arm plain|wayline --dir D --service URL
[--point P --marker M] [--resume] --out report.json``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from wayline.demo.payment_flow import KillSwitch, post_charge
from wayline.langgraph.effects import effect
from wayline.langgraph.saver import WaylineSaver

RUN_ID = "order-7"


class Pay(TypedDict, total=False):
    customer: str
    amount: int
    charge_id: str
    receipt: str


def build(arm: str, service: str, at: Any, saver: BaseCheckpointSaver[Any]) -> Any:
    def send(state: Pay, key: str | None) -> dict[str, Any]:
        at("before_charge")
        return post_charge(service, state["amount"], state["customer"], key)

    def prepare(state: Pay) -> dict[str, Any]:
        return {"amount": 4200}

    def charge(state: Pay) -> dict[str, Any]:
        if arm == "plain":
            result = send(state, None)
        else:
            request = {"amount": state["amount"], "customer": state["customer"]}
            result = effect(
                "charge", lambda key: send(state, key), request=request, idempotent=True
            )
        at("after_record")
        return {"charge_id": result["id"]}

    def finalize(state: Pay) -> dict[str, Any]:
        at("after_commit")
        return {"receipt": f"{RUN_ID} paid by {state['charge_id']}"}

    g = StateGraph(Pay)
    g.add_node("prepare", prepare)
    g.add_node("charge", charge)
    g.add_node("finalize", finalize)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "charge")
    g.add_edge("charge", "finalize")
    g.add_edge("finalize", END)
    return g.compile(checkpointer=saver)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--arm", choices=["plain", "wayline"], required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--point")
    p.add_argument("--marker")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out")
    args = p.parse_args()
    hook = KillSwitch(args.point, args.marker, args.service) if args.point else None

    def at(where: str) -> None:
        if hook is not None:
            hook(where)

    d = Path(args.dir)
    with contextlib.ExitStack() as stack:
        saver: BaseCheckpointSaver[Any]
        if args.arm == "plain":
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(str(d / "lg.db"), check_same_thread=False)
            stack.callback(conn.close)
            saver = SqliteSaver(conn)
        else:
            saver = stack.enter_context(WaylineSaver.from_url(f"sqlite:///{d / 'runs.db'}"))
        app = build(args.arm, args.service, at, saver)
        cfg = {"configurable": {"thread_id": RUN_ID}}
        inp = None if args.resume else {"customer": "cus_7"}
        result = app.invoke(inp, cfg, durability="sync")
    if args.out:
        Path(args.out).write_text(json.dumps({"result": result}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
