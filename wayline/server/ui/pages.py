"""The dashboard's pages and actions. Each page gathers its data in one blocking function
(run off the event loop) scoped to the signed-in key's tenant, then renders HTML."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from wayline.client import Wayline
from wayline.control.keys import Principal
from wayline.effects.ops import RESOLVABLE, resolve_effect
from wayline.errors import AuthError, WaylineError
from wayline.graph.checkpoint import BlobCache, decode_results
from wayline.server.http import call
from wayline.server.jsonable import iso, to_jsonable
from wayline.server.operator import approvals_inbox, effect_json
from wayline.server.service import Service
from wayline.server.ui.html import bytes_chart, diff_rows, esc, form, page, pre_json, table
from wayline.server.ui.session import COOKIE, Session, Sessions
from wayline.store.records import RUN_STATUSES, RunRecord

__all__ = ["Dashboard"]

STATUSES = RUN_STATUSES
TIMELINE_STEPS = 200


def _status(s: str) -> str:
    return f'<span class="status {esc(s)}">{esc(s)}</span>'


def _run_link(run_id: str) -> str:
    return f'<a href="/ui/runs/{quote(run_id)}">{esc(run_id)}</a>'


def _notice(request: Request) -> str:
    msg, err = request.query_params.get("msg"), request.query_params.get("err")
    out = f"<p><b>{esc(msg)}</b></p>" if msg else ""
    return out + (f'<p class="err">{esc(err)}</p>' if err else "")


def _back(target: str | None, **query: str) -> RedirectResponse:
    path = target if target and target.startswith("/ui/") and "//" not in target else "/ui/runs"
    path = path.split("?")[0]
    return RedirectResponse(f"{path}?{urlencode(query)}" if query else path, status_code=303)


class Dashboard:
    def __init__(self, service: Service, sessions: Sessions, dev: Principal | None) -> None:
        self.svc = service
        self.sessions = sessions
        self.dev = dev

    # -- sign-in ----------------------------------------------------------------------

    def _session(self, request: Request) -> Session | None:
        return self.sessions.current(request)

    async def _who(self, request: Request) -> Session | None:
        return await call(self._session, request)

    async def login_page(self, request: Request) -> Response:
        body = (
            _notice(request)
            + '<form method="post" action="/ui/login"><label>API key <input name="key" '
            'type="password" size="60" autocomplete="off"></label> <button>Sign in</button>'
            '</form><p class="muted">wayline keys create --tenant T --actor ID --roles ...</p>'
        )
        return HTMLResponse(page("Sign in", body))

    async def login(self, request: Request) -> Response:
        data = await request.form()
        key = str(data.get("key") or "")
        try:
            if not key and self.dev is not None:  # --dev: loopback only, no key needed
                sid, _ = self.sessions.sign_in_as(self.dev)
            else:
                sid, _ = await call(self.sessions.sign_in, key)
        except AuthError as exc:
            return RedirectResponse(f"/ui/login?{urlencode({'err': str(exc)})}", status_code=303)
        response = RedirectResponse("/ui/runs", status_code=303)
        response.set_cookie(
            COOKIE,
            sid,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/ui",
            max_age=8 * 3600,
        )
        return response

    async def logout(self, request: Request) -> Response:
        session = await self._who(request)
        if session is not None:
            data = await request.form()
            Sessions.check_post(request, session, str(data.get("csrf") or ""))
            self.sessions.sign_out(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response

    async def _page(self, request: Request, title: str, build: Any, *args: Any) -> Response:
        session = await self._who(request)
        if session is None:
            return RedirectResponse("/ui/login", status_code=303)
        try:
            body = await call(build, session, request, *args)
        except WaylineError as exc:
            body = f'<p class="err">{esc(exc)}</p>'
        who = session.principal
        logout = form("/ui/logout", session.csrf, {}, "Sign out")
        label = f"{who.actor} @ {who.tenant} ({','.join(who.roles) or 'no roles'}) "
        html = page(title, _notice(request) + body, who=label)
        return HTMLResponse(html.replace("</nav>", f"{logout}</nav>", 1))

    # -- pages ------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return RedirectResponse("/ui/runs", status_code=303)

    async def runs(self, request: Request) -> Response:
        return await self._page(request, "Runs", self._runs)

    def _runs(self, session: Session, request: Request) -> str:
        tenant = session.principal.tenant
        status = request.query_params.get("status") or None
        q = (request.query_params.get("q") or "").strip().lower()
        runs = self.svc.store.list_runs(tenant, status=status, limit=500)  # type: ignore[arg-type]
        if q:
            runs = [r for r in runs if q in r.run_id.lower() or q in r.graph_name.lower()]
        options = "".join(
            f'<option value="{s}"{" selected" if s == status else ""}>{s}</option>'
            for s in STATUSES
        )
        filters = (
            '<form method="get" action="/ui/runs"><select name="status"><option value="">any'
            f' status</option>{options}</select> <input name="q" placeholder="search id or '
            f'graph" value="{esc(q)}"> <button>Filter</button></form>'
        )
        rows = [
            [
                _run_link(r.run_id),
                esc(r.graph_name),
                _status(r.status),
                esc(r.step),
                esc(", ".join(r.next_nodes)),
                esc(r.lease_owner or ""),
                esc(iso(r.updated_at)),
            ]
            for r in runs
        ]
        return filters + table(
            ["run", "graph", "status", "step", "next", "lease", "updated"], rows, cls="runs"
        )

    async def run(self, request: Request) -> Response:
        rid = request.path_params["rid"]
        return await self._page(request, f"Run {rid}", self._run, rid)

    def _run(self, session: Session, request: Request, rid: str) -> str:
        tenant = session.principal.tenant
        store = self.svc.store
        run = store.get_run(tenant, rid)
        if run is None:
            return f'<p class="err">no run {esc(rid)} for tenant {esc(tenant)}</p>'
        head = table(
            ["status", "graph", "step", "next", "durability", "lease", "error"],
            [
                [
                    _status(run.status),
                    esc(f"{run.graph_name}@{run.graph_version}"),
                    esc(run.step),
                    esc(", ".join(run.next_nodes)),
                    esc(run.durability),
                    esc(run.lease_owner or ""),
                    esc(run.error or ""),
                ]
            ],
        )
        effects = store.list_effects(tenant, rid)
        parts = [head, "<h2>Approvals waiting</h2>", self._approvals_html(session, rid)]
        parts += ["<h2>Step timeline</h2>", self._timeline(run, effects)]
        parts += ["<h2>State</h2>", self._state_html(run, request)]
        meter: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for m in store.load_meter(tenant, rid):
            if m.step > run.step - TIMELINE_STEPS:  # the chart shows the latest steps
                meter[m.step][m.channel] += m.bytes
        parts += ["<h2>Bytes written per step, by channel</h2>", bytes_chart(meter)]
        parts += ["<h2>Effects</h2>", self._effects_html(session, rid, effects)]
        audit = store.load_audit(tenant, rid)
        parts += [
            "<h2>Audit</h2>",
            table(
                ["at", "actor", "action", "outcome", "digest", "detail"],
                [
                    [
                        esc(iso(a.at)),
                        esc(a.actor),
                        esc(a.action),
                        esc(a.outcome),
                        esc((a.digest or "")[:16]),
                        esc(a.detail or ""),
                    ]
                    for a in audit
                ],
            ),
        ]
        return "".join(parts)

    def _timeline(self, run: RunRecord, effects: list[Any]) -> str:
        store = self.svc.store
        first = max(-1, run.step - TIMELINE_STEPS)
        deltas = store.load_deltas(run.tenant_id, run.run_id, first, run.step)
        assistant = self.svc.registry.for_run(run)
        resolve = BlobCache(store, run.tenant_id)
        again = {e.step for e in effects if e.attempt > 1}
        answers = sum(
            a.action == "decide" and a.outcome == "accepted"
            for a in store.load_audit(run.tenant_id, run.run_id)
        )
        leases = {d.fencing_token for d in deltas}
        # every resume takes a new lease: when the run's accepted decisions account for
        # every new lease, each is a resume after an answer, not a takeover
        after_answers = 0 < len(leases) - 1 <= answers
        rows, token = [], None
        for d in deltas:
            nodes = "?"
            if assistant is not None:
                nodes = ", ".join(
                    r.name for r in decode_results(assistant.graph.codec, d.payload, resolve)
                )
            note = []
            if token is not None and d.fencing_token != token and after_answers:
                note.append(f"resumed after its approval was decided (lease {d.fencing_token})")
            elif token is not None and d.fencing_token != token:
                note.append(
                    f"resumed here under lease {d.fencing_token} (after an interrupt, a "
                    "restart or a worker that died: only then may this step's nodes have "
                    "run before)"
                )
            if d.step in again:
                note.append("an effect was attempted again")
            token = d.fencing_token
            link = f'<a href="?step={d.step}#state">state</a>'
            rows.append([esc(d.step), esc(nodes), esc(d.fencing_token), esc("; ".join(note)), link])
        return table(["step", "nodes", "lease", "notes", ""], rows, cls="timeline")

    def _state_html(self, run: RunRecord, request: Request) -> str:
        assistant = self.svc.registry.for_run(run)
        if assistant is None or run.step < 0:
            return '<p class="muted">no state to show (graph not served, or no step yet)</p>'
        qp = request.query_params

        def state_at(step: int) -> dict[str, Any]:
            conf = {"thread_id": run.run_id, "tenant": run.tenant_id, "step": step}
            values: dict[str, Any] = to_jsonable(
                assistant.graph.get_state({"configurable": conf}).values
            )
            return values

        def step_of(name: str, default: int) -> int:
            try:
                return max(0, min(int(qp.get(name, default)), run.step))
            except ValueError:
                return default

        step = step_of("step", run.step)
        a, b = step_of("a", max(0, run.step - 1)), step_of("b", run.step)
        picker = (
            '<form id="state" method="get"><label>state at step <input name="step" size="4" '
            f'value="{step}"></label> <button>Show</button></form>'
        )
        diff_form = (
            '<form method="get"><label>diff step <input name="a" size="4" '
            f'value="{a}"></label> <label>and step <input name="b" size="4" value="{b}">'
            "</label> <button>Diff</button></form>"
        )
        diff = diff_rows(state_at(a), state_at(b))
        return (
            picker
            + f"<h3>State at step {step}</h3>"
            + pre_json(state_at(step))
            + diff_form
            + f"<h3>Diff of steps {a} → {b}</h3>"
            + table(["key", "change", "value"], diff, cls="diff")
        )

    def _effects_html(self, session: Session, rid: str, effects: list[Any]) -> str:
        rows = []
        for e in effects:
            j = effect_json(e)
            actions = ""
            if e.status in RESOLVABLE and e.status != "PENDING":
                fields = {"run_id": rid, "key": e.key, "back": f"/ui/runs/{rid}"}
                result = (
                    '<input name="result" placeholder=\'result JSON, e.g. {"id": "..."}\' '
                    'size="28">'
                )
                actions = (
                    form(
                        "/ui/effects/resolve",
                        session.csrf,
                        {**fields, "outcome": "succeeded"},
                        "Resolve: succeeded",
                        result=result,
                    )
                    + form(
                        "/ui/effects/resolve",
                        session.csrf,
                        {**fields, "outcome": "failed"},
                        "Resolve: failed",
                    )
                    + form(
                        "/ui/effects/resolve",
                        session.csrf,
                        {**fields, "outcome": "retry"},
                        "Retry (same key)",
                    )
                )
            rows.append(
                [
                    esc(j["key"][:24]),
                    esc(j["node"]),
                    esc(j["step"]),
                    esc(j["name"]),
                    _status(j["status"]),
                    esc(j["attempt"]),
                    esc(j["error"] or ""),
                    actions,
                ]
            )
        return table(
            ["key", "node", "step", "name", "status", "attempt", "error", ""], rows, cls="effects"
        )

    def _approvals_html(self, session: Session, run_id: str | None) -> str:
        items = approvals_inbox(self.svc, session.principal)
        if run_id is not None:
            items = [i for i in items if i["run_id"] == run_id]
        if not items:
            return '<p class="muted">none</p>'
        rows = []
        for i in items:
            if i["error"] is not None:  # its questions cannot be read: shown, not decidable
                rows.append([_run_link(i["run_id"]), esc(i["error"]), "", "", "", ""])
                continue
            fields = {
                "run_id": i["run_id"],
                "interrupt_id": i["interrupt_id"],
                "digest": i["digest"] or "",
                "back": f"/ui/runs/{i['run_id']}" if run_id else "/ui/approvals",
            }
            buttons = form(
                "/ui/approvals/decide", session.csrf, {**fields, "choice": "approve"}, "Approve"
            ) + form("/ui/approvals/decide", session.csrf, {**fields, "choice": "reject"}, "Reject")
            rows.append(
                [
                    _run_link(i["run_id"]),
                    pre_json(i["proposal"]),
                    esc((i["digest"] or "")[:16]),
                    esc(", ".join(i["approvers"]) if i["approvers"] is not None else "anyone"),
                    esc(i["expires_at"] or ""),
                    buttons if i["you_may_decide"] else '<span class="muted">not yours</span>',
                ]
            )
        return table(
            ["run", "proposal", "digest", "approvers", "expires", ""], rows, cls="approvals"
        )

    async def approvals(self, request: Request) -> Response:
        return await self._page(request, "Approvals", lambda s, r: self._approvals_html(s, None))

    async def reconcile(self, request: Request) -> Response:
        return await self._page(request, "Reconciliation queue", self._reconcile)

    def _reconcile(self, session: Session, request: Request) -> str:
        tenant = session.principal.tenant
        parts = []
        for status in ("parked", "failed"):
            for run in self.svc.store.list_runs(tenant, status=status, limit=200):
                open_ = [
                    e
                    for e in self.svc.store.list_effects(tenant, run.run_id)
                    if e.status in ("UNKNOWN", "EXECUTING", "FAILED")
                ]
                if open_ or status == "parked":
                    parts.append(
                        f"<h2>{_run_link(run.run_id)} {_status(run.status)}</h2>"
                        f"<p>{esc(run.error or '')}</p>"
                        + self._effects_html(session, run.run_id, open_)
                    )
        return "".join(parts) or '<p class="muted">nothing waits for an operator</p>'

    async def workers(self, request: Request) -> Response:
        return await self._page(request, "Workers and leases", self._workers)

    def _workers(self, session: Session, request: Request) -> str:
        leases = self.svc.tables.leases(session.principal.tenant)
        rows = [
            [
                esc(lease["lease_owner"]),
                _run_link(lease["run_id"]),
                esc(lease["graph_name"]),
                esc(lease["step"]),
                esc(iso(lease["lease_expires_at"])),
            ]
            for lease in leases
        ]
        worker = self.svc_worker
        mine = f"<p>This server's worker: {esc(worker)}</p>" if worker else ""
        return mine + table(["worker", "run", "graph", "step", "lease expires"], rows)

    svc_worker: str | None = None

    async def memory(self, request: Request) -> Response:
        return await self._page(request, "Memory", self._memory)

    def _memory(self, session: Session, request: Request) -> str:
        from wayline.server.ui.memory_page import memory_html

        namespace = request.query_params.get("ns") or None
        return memory_html(self.svc.store, session.principal.tenant, namespace)

    async def health(self, request: Request) -> Response:
        return await self._page(request, "Health", self._health)

    def _health(self, session: Session, request: Request) -> str:
        from wayline.server.ui.health_page import WINDOWS, health_html

        try:
            window = int(request.query_params.get("window") or 60)
        except ValueError:
            window = 60
        window = window if window in WINDOWS else 60
        return health_html(self.svc.store, session.principal.tenant, window)

    async def audit(self, request: Request) -> Response:
        return await self._page(request, "Audit log", self._audit)

    def _audit(self, session: Session, request: Request) -> str:
        tenant = session.principal.tenant
        rows = []
        for run in self.svc.store.list_runs(tenant, limit=100):
            for a in self.svc.store.load_audit(tenant, run.run_id):
                rows.append((a.at, run.run_id, a))
        rows.sort(key=lambda r: r[0], reverse=True)
        return table(
            ["at", "run", "actor", "action", "outcome", "digest", "detail"],
            [
                [
                    esc(iso(at)),
                    _run_link(rid),
                    esc(a.actor),
                    esc(a.action),
                    esc(a.outcome),
                    esc((a.digest or "")[:16]),
                    esc(a.detail or ""),
                ]
                for at, rid, a in rows[:500]
            ],
        )

    # -- actions ----------------------------------------------------------------------

    async def _action(self, request: Request, act: Any) -> Response:
        session = await self._who(request)
        if session is None:
            return RedirectResponse("/ui/login", status_code=303)
        data = {k: str(v) for k, v in (await request.form()).items()}
        Sessions.check_post(request, session, data.get("csrf"))
        try:
            message = await call(act, session.principal, data)
        except (WaylineError, ValueError) as exc:
            return _back(data.get("back"), err=str(exc))
        return _back(data.get("back"), msg=message)

    async def decide(self, request: Request) -> Response:
        return await self._action(request, self._decide)

    def _decide(self, who: Principal, data: dict[str, str]) -> str:
        who.require("execute")
        approved = data.get("choice") == "approve"
        Wayline(self.svc.store, tenant=who.tenant).resume(
            data["run_id"],
            {"approved": approved, "by": who.actor},
            actor=who.as_actor,
            digest=data.get("digest") or None,
            interrupt_id=data.get("interrupt_id") or None,
        )
        return f"{'approved' if approved else 'rejected'} as {who.actor}; the run continues"

    async def resolve(self, request: Request) -> Response:
        return await self._action(request, self._resolve)

    def _resolve(self, who: Principal, data: dict[str, str]) -> str:
        who.require("execute")
        raw = data.get("result") or ""
        result = json.loads(raw) if raw.strip() else None
        rec = resolve_effect(
            self.svc.store,
            who.tenant,
            data["run_id"],
            data["key"],
            data["outcome"],  # type: ignore[arg-type]
            result=result,
            reason=f"resolved by {who.actor} in the dashboard",
        )
        run = self.svc.store.get_run(who.tenant, data["run_id"])
        if run is not None and run.status == "parked":
            self.svc.store.requeue(who.tenant, data["run_id"])
        return f"effect {rec.key[:16]} is now {rec.status}; the run is queued again"
