"""prepare -> charge -> finalize against the local payments service, with the charge node
built for one idempotency-key strategy, and kill points for the crash test.

Strategies (how the charge node keys its request):

- ``naive``: no key. A re-executed node charges again.
- ``uuid4``: a fresh uuid4 made inside the node. A re-executed node makes a new one, so
  the provider cannot tell a retry from a new charge: no better than ``naive``.
- ``wayline``: ``ctx.effect`` with its derived key (tenant, run, task, name, seq), sent as
  ``Idempotency-Key``; an outcome left unknown by a dead worker is resent under the same
  key (``idempotent=True``), which the provider deduplicates.
- ``reconcile``: as ``wayline``, but an unknown outcome is settled by asking the provider
  (``GET /charges?idempotency_key=K``) instead of resending.
- ``business``: ``ctx.effect`` with ``key=f"charge-{order_id}"``: every run that charges
  this order converges on one charge.
- ``strict`` (not in the default matrix): ``ctx.effect`` with neither ``idempotent`` nor
  ``reconcile``: an unknown outcome parks the run, never a resend.

Kill points (where a worker started with ``KillSwitch`` stops):

- ``before_charge``: in the charge node, just before the HTTP request leaves (for the
  ``ctx.effect`` strategies: after the intent record is durable).
- ``provider_committed``: the service SIGKILLs the worker after it committed the charge and
  before it responds (armed through ``POST /control`` with the worker's pid).
- ``after_record``: the request returned (for ``ctx.effect``: its result is recorded);
  the node has not returned, so its step is not committed.
- ``after_commit``: at the start of finalize: the charge step has committed (under
  durability ``sync``; ``async`` may still hold it, ``exit`` holds everything).
- ``after_raise`` (``strict`` only): the service commits the charge and drops the response,
  the effect's function raises, the ledger records the outcome UNKNOWN, and the worker
  stops dead right after.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from wayline import END, START, StateGraph
from wayline.effects import NOT_FOUND
from wayline.errors import EffectOutcomeUnknown
from wayline.graph.compiled import CompiledGraph
from wayline.graph.context import NodeContext
from wayline.store.base import Store

__all__ = [
    "ALL_KILL_POINTS",
    "ALL_STRATEGIES",
    "KILL_POINTS",
    "STRATEGIES",
    "KillSwitch",
    "PaymentState",
    "build_flow",
    "order_input",
    "post_charge",
]

STRATEGIES = ("naive", "uuid4", "wayline", "reconcile", "business")
KILL_POINTS = ("before_charge", "provider_committed", "after_record", "after_commit")
ALL_STRATEGIES = (*STRATEGIES, "strict")
ALL_KILL_POINTS = (*KILL_POINTS, "after_raise")
"""With the strategy and the kill point that only the strict-outcome tests use."""
HTTP_TIMEOUT_S = 30.0

Hook = Callable[[str], None]
"""Called with a point's name (``before_charge``, ``after_record``, ``after_commit``)."""


class PaymentState(TypedDict, total=False):
    order_id: str
    customer: str
    items: list[int]
    amount: int
    payment: dict[str, Any]
    receipt: str


def order_input(order_id: str = "order-1042", customer: str = "cus_42") -> PaymentState:
    return {"order_id": order_id, "customer": customer, "items": [2500, 1200, 500]}


# -- the provider's client ------------------------------------------------------------------


def post_charge(url: str, amount: int, customer: str, key: str | None = None) -> dict[str, Any]:
    """``POST /charges``; the charge as the provider returned it (raises on HTTP errors)."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    body = json.dumps({"amount": amount, "customer": customer}).encode()
    return _call(urllib.request.Request(f"{url}/charges", body, headers, method="POST"))


def find_charge(url: str, key: str) -> dict[str, Any] | None:
    """The provider's charge under ``key``, or None if it never saw the key."""
    query = urllib.parse.urlencode({"idempotency_key": key})
    found = _call(urllib.request.Request(f"{url}/charges?{query}"))["charges"]
    return {**found[0], "deduplicated": True} if found else None


def control(url: str, **armed: Any) -> dict[str, Any]:
    """``POST /control``: arm a fault for the provider's next charge request."""
    body = json.dumps(armed).encode()
    headers = {"Content-Type": "application/json"}
    return _call(urllib.request.Request(f"{url}/control", body, headers, method="POST"))


def _call(req: urllib.request.Request) -> dict[str, Any]:
    with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
        result: dict[str, Any] = json.loads(resp.read())
        return result


# -- kill points ----------------------------------------------------------------------------


class KillSwitch:
    """A hook that stops this process dead at ``point``: it writes ``marker`` (fsynced) and
    blocks until SIGKILLed by whoever polls the marker; for ``provider_committed`` it asks
    the service to SIGKILL this pid after committing the next charge instead."""

    def __init__(self, point: str, marker: str, service_url: str) -> None:
        if point not in ALL_KILL_POINTS:
            raise ValueError(f"unknown kill point {point!r}; one of {', '.join(KILL_POINTS)}")
        self.point = point
        self.marker = marker
        self.service_url = service_url

    def __call__(self, where: str) -> None:
        if self.point == "provider_committed" and where == "before_charge":
            control(self.service_url, kill_pid=os.getpid())
            self._mark("armed")  # the service ends this process; nothing blocks here
        elif self.point == "after_raise" and where == "before_charge":
            control(self.service_url, drop_response=True)
            self._mark("armed")  # committed, then no response: the call raises
        elif where == self.point:
            self._mark("blocked")
            threading.Event().wait()  # never set: only SIGKILL ends this process

    def _mark(self, event: str) -> None:
        data = json.dumps({"pid": os.getpid(), "point": self.point, "event": event}) + "\n"
        fd = os.open(self.marker, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data.encode())
            os.fsync(fd)
        finally:
            os.close(fd)


# -- the flow -------------------------------------------------------------------------------


def build_flow(
    store: Store | str | None,
    service_url: str,
    strategy: str,
    hook: Hook | None = None,
) -> CompiledGraph:
    """The payment flow compiled against ``store``, charging at ``service_url``."""
    if strategy not in ALL_STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; one of {', '.join(ALL_STRATEGIES)}")

    def at(point: str) -> None:
        if hook is not None:
            hook(point)

    def send(state: PaymentState, key: str | None) -> dict[str, Any]:
        at("before_charge")
        return post_charge(service_url, state["amount"], state["customer"], key)

    def prepare(state: PaymentState) -> dict[str, Any]:
        return {"amount": sum(state["items"])}

    def charge(state: PaymentState, ctx: NodeContext) -> dict[str, Any]:
        request = {"amount": state["amount"], "customer": state["customer"]}
        if strategy == "naive":
            result = send(state, None)
        elif strategy == "uuid4":
            result = send(state, str(uuid.uuid4()))
        elif strategy == "strict":
            try:
                result = ctx.effect("charge", lambda key: send(state, key), request=request)
            except EffectOutcomeUnknown:
                at("after_raise")  # the ledger holds UNKNOWN: the worker may die now
                raise
        elif strategy == "reconcile":
            result = ctx.effect(
                "charge",
                lambda key: send(state, key),
                request=request,
                reconcile=lambda key: find_charge(service_url, key) or NOT_FOUND,
            )
        else:
            result = ctx.effect(
                "charge",
                lambda key: send(state, key),
                request=request,
                key=f"charge-{state['order_id']}" if strategy == "business" else None,
                idempotent=True,
            )
        at("after_record")
        return {"payment": {k: result[k] for k in ("id", "amount", "deduplicated")}}

    def finalize(state: PaymentState) -> dict[str, Any]:
        at("after_commit")
        return {"receipt": f"{state['order_id']} paid by {state['payment']['id']}"}

    g = StateGraph(PaymentState, name=f"payment_flow_{strategy}", version="1")
    g.add_node("prepare", prepare)
    g.add_node("charge", charge)
    g.add_node("finalize", finalize)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "charge")
    g.add_edge("charge", "finalize")
    g.add_edge("finalize", END)
    return g.compile(store)
