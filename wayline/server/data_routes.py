"""wayline's data-class routes beside the operator routes (docs/data.md): everything held
about a data subject, its erasure with a receipt, and a retention policy applied by class.
All three are ``admin``, like the export and purge of a run: an export by subject is
everything the store holds about a person."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from wayline.client import Wayline
from wayline.control.policy import DataPolicy
from wayline.server.http import ApiError, call, principal, read_json, reply
from wayline.server.jsonable import to_jsonable

__all__ = ["routes"]


def _client(request: Request) -> Wayline:
    who = principal(request)
    who.require("admin")
    return Wayline(request.app.state.service.store, tenant=who.tenant, scope=who.scope)


async def subject_export(request: Request) -> Response:
    client = _client(request)
    return reply(to_jsonable(await call(client.export_subject, request.path_params["subject"])))


async def subject_erase(request: Request) -> Response:
    client = _client(request)
    body = await read_json(request, required=False) or {}
    classes = body.get("classes")
    if classes is not None and not (
        isinstance(classes, list) and all(isinstance(c, str) for c in classes)
    ):
        raise ApiError(422, "classes must be a list of class names, or absent (whole runs)")
    actor = principal(request).actor
    receipt = await call(
        client.erase_subject, request.path_params["subject"], classes=classes, actor=actor
    )
    return reply(to_jsonable(receipt))


async def retention_apply(request: Request) -> Response:
    client = _client(request)
    body = await read_json(request, required=True)
    policy = body.get("policy")
    if not isinstance(policy, str):
        raise ApiError(422, "send {'policy': 'pii=30d:redact,default=365d:purge'}")
    rules = DataPolicy.parse(policy)
    actions = await call(client.apply_policy, rules, dry_run=bool(body.get("dry_run")))
    return reply(to_jsonable(actions))


def routes() -> list[BaseRoute]:
    return [
        Route("/wayline/subjects/{subject}", subject_export, methods=["GET"]),
        Route("/wayline/subjects/{subject}/erase", subject_erase, methods=["POST"]),
        Route("/wayline/retention/apply", retention_apply, methods=["POST"]),
    ]
