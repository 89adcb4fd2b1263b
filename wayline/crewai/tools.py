"""``ledgered(tool, flow)``: a CrewAI tool whose calls go through wayline's effect ledger.

A call that succeeded returns its recorded result when it is made again, by CrewAI's tool
retry path, a retried method, or a resumed flow in a fresh process, instead of running
again (CrewAI has no guard of its own: a retried payment tool pays twice). The intent is
durable, fenced by the flow's lease, before the tool runs; the outcome before the call
returns. The key is derived from (run incarnation, flow id, method, how many times that
method had completed before this execution, tool, arguments), so it is the same on every
retry and resume of one method execution and new in the next cycle of a looping flow; the
tool may pass it on to its provider (``pass_key="idempotency_key"``).

A call found in flight (its process died after dispatching it) has an unknown outcome: with
``idempotent=True`` it is sent again under the same key; otherwise the flow stops with
``RunParkedError`` for an operator (``wayline effects resolve``). A tool that raised is
recorded as failed and may be called again under the same key.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from crewai.flow.flow_context import current_flow_method_name
from crewai.tools import BaseTool
from pydantic import PrivateAttr

from wayline.codec import default_codec
from wayline.crewai.persistence import WaylineFlowPersistence
from wayline.errors import EffectRecordChanged, RunParkedError, WaylineError
from wayline.ids import derive_id
from wayline.store.records import CommitBatch, EffectRecord, EffectStatus, EffectWrite

__all__ = ["LedgeredTool", "ledgered"]


class LedgeredTool(BaseTool):
    """A tool wrapped by ``ledgered``: same name, description and arguments."""

    _inner: BaseTool = PrivateAttr()
    _flow: Any = PrivateAttr()
    _persistence: WaylineFlowPersistence = PrivateAttr()
    _idempotent: bool = PrivateAttr(default=False)
    _pass_key: str | None = PrivateAttr(default=None)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(kwargs, lambda key: self._invoke(key, args, kwargs))

    def _invoke(self, key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._pass_key is not None:
            kwargs = {**kwargs, self._pass_key: key}
        return self._inner._run(*args, **kwargs)

    def call(self, request: dict[str, Any], fn: Any) -> Any:
        p = self._persistence
        flow_id = str(self._flow.state.id if hasattr(self._flow.state, "id") else "")
        if not flow_id:
            raise WaylineError(f"tool {self.name!r}: its flow has no state id to key calls by")
        method = current_flow_method_name.get() or "unknown"
        held = p.hold(flow_id)
        cycle = held.methods.count(method)
        digest = hashlib.sha256(default_codec.dumps([self.name, request])).hexdigest()
        key = "wl-" + derive_id(held.incarnation, flow_id, method, cycle, self.name, digest)
        store = p.store
        rec = store.get_effect(p.tenant, key)
        expect: EffectStatus | None = None
        if rec is not None:
            if rec.status == "SUCCEEDED":
                return None if rec.result is None else default_codec.loads(rec.result)
            if rec.status in ("EXECUTING", "UNKNOWN") and not self._idempotent:
                if rec.status == "EXECUTING":
                    self._write(held.token, flow_id, replace(rec, "UNKNOWN"), "EXECUTING")
                raise RunParkedError(flow_id, key)
            expect = rec.status
        else:
            rec = EffectRecord(
                tenant_id=p.tenant,
                key=key,
                run_id=flow_id,
                kind="effect",
                node=method,
                step=held.steps,  # the row the method's completion will be
                name=self.name,
                seq=cycle,
                attempt=0,
                request_digest=digest,
                status="PENDING",
                fencing_token=held.token,
            )
        current = dataclasses.replace(rec, attempt=rec.attempt + 1, status="EXECUTING")
        self._write(held.token, flow_id, current, expect)  # durable before the call
        try:
            value = fn(key)
        except Exception as exc:
            failed = dataclasses.replace(current, status="FAILED", error=f"{exc}")
            self._write(held.token, flow_id, failed, "EXECUTING")
            raise
        done = dataclasses.replace(current, status="SUCCEEDED", result=default_codec.dumps(value))
        self._write(held.token, flow_id, done, "EXECUTING")
        return value

    def _write(
        self, token: int, flow_id: str, rec: EffectRecord, expect: EffectStatus | None
    ) -> None:
        rec = dataclasses.replace(rec, fencing_token=token)
        batch = CommitBatch(effects=[EffectWrite(rec, expect)])
        try:
            self._persistence.store.commit(self._persistence.tenant, flow_id, token, batch)
        except EffectRecordChanged:
            raise WaylineError(
                f"tool call {rec.key!r} of flow {flow_id!r} is being made by another process "
                "at the same time; this call stops and its retry will find the outcome"
            ) from None


def replace(rec: EffectRecord, status: EffectStatus) -> EffectRecord:
    return dataclasses.replace(rec, status=status)


def ledgered(
    tool: BaseTool,
    flow: Any,
    *,
    persistence: WaylineFlowPersistence | None = None,
    idempotent: bool = False,
    pass_key: str | None = None,
) -> LedgeredTool:
    """Wrap ``tool`` for use inside ``flow`` (whose state id names the run). ``pass_key``:
    the argument name under which the tool's ``_run`` receives the idempotency key."""
    p = persistence or getattr(flow, "persistence", None)
    if not isinstance(p, WaylineFlowPersistence):
        raise WaylineError(
            f"ledgered({tool.name!r}): the flow has no WaylineFlowPersistence; decorate it "
            "with @persist(WaylineFlowPersistence(url)) or pass persistence=..."
        )
    wrapped = LedgeredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
    )
    wrapped._inner = tool
    wrapped._flow = flow
    wrapped._persistence = p
    wrapped._idempotent = idempotent
    wrapped._pass_key = pass_key
    return wrapped
