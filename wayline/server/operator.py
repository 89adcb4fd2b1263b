"""wayline's own routes beside the LangGraph ones, under ``/wayline``: runs, effects to
reconcile, approvals and decisions (as the key's actor), the audit log, bytes per step and
channel, export and purge. Every one is scoped to the key's tenant."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.client import Wayline
from wayline.codec import default_codec
from wayline.control.keys import Principal
from wayline.effects.ops import list_effects, resolve_effect
from wayline.errors import CorruptionError, RunNotFoundError
from wayline.server.http import ApiError, call, principal, read_json, reply
from wayline.server.jsonable import interrupt_json, iso, to_jsonable
from wayline.server.service import Service, page
from wayline.store.records import EffectRecord, RunRecord

__all__ = ["approvals_inbox", "effect_json", "routes", "run_bytes", "run_json"]


def _svc(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


def run_json(run: RunRecord) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "graph": run.graph_name,
        "graph_version": run.graph_version,
        "status": run.status,
        "step": run.step,
        "next": list(run.next_nodes),
        "durability": run.durability,
        "error": run.error,
        "lease_owner": run.lease_owner,
        "lease_expires_at": iso(run.lease_expires_at),
        "fencing_token": run.fencing_token,
        "attempts": run.attempts,
        "queued_input": run.inbox is not None,
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
    }


def effect_json(e: EffectRecord) -> dict[str, Any]:
    result = None
    if e.result is not None:
        try:
            result = to_jsonable(default_codec.loads(e.result))
        except Exception:  # a user type this server has not registered
            result = f"<{len(e.result)} bytes>"
    return {
        "key": e.key,
        "kind": e.kind,
        "node": e.node,
        "step": e.step,
        "name": e.name,
        "seq": e.seq,
        "attempt": e.attempt,
        "status": e.status,
        "request_digest": e.request_digest,
        "result": result,
        "error": e.error,
        "updated_at": iso(e.updated_at),
    }


_UNREADABLE: dict[str, Any] = dict.fromkeys(
    ("interrupt_id", "proposal", "digest", "approvers", "expires_at", "interrupt")
) | {"you_may_decide": False}
"""The fields of a waiting run's entry whose questions cannot be read: none to decide."""


def approvals_inbox(
    svc: Service, who: Principal, *, limit: int = 500, offset: int = 0
) -> list[dict[str, Any]]:
    """Every open question of a page of the tenant's waiting runs (most recently updated
    first), with whether this actor may decide it (the policy decides again when the
    decision comes)."""
    client = Wayline(svc.store, tenant=who.tenant, scope=who.scope)
    out = []
    waiting = svc.store.list_runs(who.tenant, status="interrupted", limit=limit, offset=offset)
    for run in waiting:
        try:
            questions = client.pending(run.run_id)
        except CorruptionError as exc:  # listed with why: it hides no other question
            entry = {"run_id": run.run_id, "graph": run.graph_name, "error": str(exc)}
            out.append({**_UNREADABLE, **entry})
            continue
        for q in questions:
            approvers = q.approvers
            may = (
                approvers is None or who.actor in approvers or bool(set(who.roles) & set(approvers))
            )
            out.append(
                {
                    "run_id": run.run_id,
                    "graph": run.graph_name,
                    "interrupt_id": q.id,
                    "proposal": to_jsonable(q.value),
                    "digest": q.digest,
                    "approvers": list(approvers) if approvers is not None else None,
                    "expires_at": iso(q.expires_at),
                    "you_may_decide": may,
                    "interrupt": interrupt_json(q),
                    "error": None,
                }
            )
    return out


def run_bytes(svc: Service, tenant: str, run_id: str) -> dict[str, Any]:
    """Bytes written per step, table and channel (the meter, never pre-summed) and the
    totals per table and per channel."""
    _get_run(svc, tenant, run_id)
    rows = svc.store.load_meter(tenant, run_id)
    per_table: dict[str, int] = {}
    per_channel: dict[str, int] = {}
    for r in rows:
        per_table[r.table] = per_table.get(r.table, 0) + r.bytes
        per_channel[r.channel] = per_channel.get(r.channel, 0) + r.bytes
    return {
        "run_id": run_id,
        "rows": [
            {"step": r.step, "table": r.table, "channel": r.channel, "bytes": r.bytes} for r in rows
        ],
        "per_table": per_table,
        "per_channel": per_channel,
        "total": sum(per_table.values()),
    }


def _get_run(svc: Service, tenant: str, run_id: str) -> RunRecord:
    run = svc.store.get_run(tenant, run_id)
    if run is None:
        raise RunNotFoundError(f"no run {run_id!r} for this key's tenant")
    return run


def decide(svc: Service, who: Principal, run_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Decide an approval as the key's actor; the digest names the proposal decided on."""
    who.require("execute")
    if "decision" not in body:
        raise ApiError(422, "send {'decision': ..., 'digest': ...} (digest from the inbox)")
    client = Wayline(svc.store, tenant=who.tenant, scope=who.scope)
    _get_run(svc, who.tenant, run_id)
    client.resume(
        run_id,
        body["decision"],
        actor=who.as_actor,
        digest=body.get("digest"),
        interrupt_id=body.get("interrupt_id"),
    )
    return run_json(_get_run(svc, who.tenant, run_id))


def resolve(
    svc: Service, who: Principal, run_id: str, key: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Record an operator's finding about an effect, then put a parked run back in the
    queue so a worker continues it."""
    who.require("execute")
    outcome = body.get("outcome")
    if outcome not in ("succeeded", "failed", "retry"):
        raise ApiError(422, "outcome must be one of succeeded, failed, retry")
    rec = resolve_effect(
        svc.store,
        who.tenant,
        run_id,
        key,
        outcome,
        result=body.get("result"),
        reason=body.get("reason"),
        actor=who.actor,
    )
    run = _get_run(svc, who.tenant, run_id)
    if run.status == "parked":
        Wayline(svc.store, tenant=who.tenant, scope=who.scope).retry(run_id, actor=who.actor)
    return effect_json(rec)


def purge(svc: Service, who: Principal, run_id: str) -> int:
    who.require("admin")
    _get_run(svc, who.tenant, run_id)
    rows = Wayline(svc.store, tenant=who.tenant, scope=who.scope).purge(run_id, actor=who.actor)
    svc.tables.delete_thread(who.tenant, run_id)
    return rows


async def runs_list(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    status = request.query_params.get("status") or None
    limit = int(request.query_params.get("limit", 100))
    runs = await call(_svc(request).store.list_runs, who.tenant, status=status, limit=limit)
    return reply([run_json(r) for r in runs])


async def run_get(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    return reply(
        run_json(await call(_get_run, _svc(request), who.tenant, request.path_params["rid"]))
    )


async def effects(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    found = await call(list_effects, _svc(request).store, who.tenant, request.path_params["rid"])
    return reply([effect_json(e) for e in found])


async def effect_resolve(request: Request) -> Response:
    who = principal(request)
    body = await read_json(request, required=True)
    p = request.path_params
    return reply(await call(resolve, _svc(request), who, p["rid"], p["key"], body))


async def approvals(request: Request) -> Response:
    """``?limit=&offset=``: a page of waiting runs (500 by default, at most 5,000)."""
    who = principal(request)
    who.require("read")
    limit, offset = page(request.query_params, default=500, most=5000)
    return reply(await call(approvals_inbox, _svc(request), who, limit=limit, offset=offset))


async def approval_decide(request: Request) -> Response:
    who = principal(request)
    body = await read_json(request, required=True)
    return reply(await call(decide, _svc(request), who, request.path_params["rid"], body))


async def audit(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    svc = _svc(request)
    rid = request.path_params["rid"]
    await call(_get_run, svc, who.tenant, rid)
    lines = await call(svc.store.load_audit, who.tenant, rid)
    return reply(
        [
            {
                "at": iso(a.at),
                "actor": a.actor,
                "action": a.action,
                "outcome": a.outcome,
                "digest": a.digest,
                "detail": a.detail,
            }
            for a in lines
        ]
    )


async def bytes_(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    return reply(await call(run_bytes, _svc(request), who.tenant, request.path_params["rid"]))


async def export(request: Request) -> Response:
    who = principal(request)
    who.require("admin")
    client = Wayline(_svc(request).store, tenant=who.tenant, scope=who.scope)
    return reply(to_jsonable(await call(client.export, request.path_params["rid"])))


async def purge_route(request: Request) -> Response:
    who = principal(request)
    rows = await call(purge, _svc(request), who, request.path_params["rid"])
    return reply({"run_id": request.path_params["rid"], "rows_deleted": rows})


async def workers(request: Request) -> Response:
    who = principal(request)
    who.require("read")
    leases = await call(_svc(request).tables.leases, who.tenant)
    return reply(to_jsonable(leases))


def routes() -> list[BaseRoute]:
    return [
        Route("/wayline/runs", runs_list, methods=["GET"]),
        Route("/wayline/runs/{rid}", run_get, methods=["GET"]),
        Route("/wayline/runs/{rid}", purge_route, methods=["DELETE"]),
        Route("/wayline/runs/{rid}/effects", effects, methods=["GET"]),
        Route("/wayline/runs/{rid}/effects/{key}/resolve", effect_resolve, methods=["POST"]),
        Route("/wayline/approvals", approvals, methods=["GET"]),
        Route("/wayline/runs/{rid}/approvals/decide", approval_decide, methods=["POST"]),
        Route("/wayline/runs/{rid}/audit", audit, methods=["GET"]),
        Route("/wayline/runs/{rid}/bytes", bytes_, methods=["GET"]),
        Route("/wayline/runs/{rid}/export", export, methods=["GET"]),
        Route("/wayline/workers", workers, methods=["GET"]),
    ]
