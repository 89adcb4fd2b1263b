"""What wakes a waiting run: durable timers (``sleep``) and approvals that expire into a
declared path (``interrupt(..., expires_in=, on_expire=...)``).

A timer is a question nobody answers: its record holds the wake time, committed with the
step that slept, and the run waits pending, queued at that time, so the claim query is its
wake-up path (as for a scheduled retry) and no worker holds it. A re-run of the node keeps
the first wake time (``interrupts.ask``), so a crash never restarts the wait. When a worker
claims the run at its time, ``due`` says what each expired record does: a timer is
answered (the node runs again and ``sleep`` returns), an approval takes its declared path.
The answers are committed before any node runs, so a second claim finds them answered and
nothing wakes twice. Pure functions over records; the run loop commits what they return.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import time
from collections.abc import Iterable
from typing import Any

from wayline.codec import Codec
from wayline.errors import WaylineError
from wayline.graph.context import sleep, sleep_until
from wayline.graph.types import OnExpire
from wayline.store.records import AuditRecord, InterruptRecord

__all__ = ["OnExpire", "Woken", "due", "encode_on_expire", "sleep", "sleep_until", "wake_time"]

EXPIRY_ACTOR = "system:expiry"
"""The actor of an expiry's audit line: nobody decided, the time passed."""


def encode_on_expire(on_expire: OnExpire | None, codec: Codec) -> str | None:
    """The stored form: JSON; a resume value goes through the codec (no pickle)."""
    if on_expire is None:
        return None
    body: dict[str, Any] = {"do": on_expire.do}
    if on_expire.do == "fail":
        body["reason"] = on_expire.reason
    elif on_expire.do == "goto":
        body["node"] = on_expire.node
    else:
        body["value"] = base64.b64encode(codec.dumps(on_expire.value)).decode()
    return json.dumps(body, sort_keys=True)


def _decode(text: str, codec: Codec, where: str) -> OnExpire:
    try:
        body = json.loads(text)
        if body["do"] == "fail":
            return OnExpire.fail(str(body["reason"]))
        if body["do"] == "goto":
            return OnExpire.goto(str(body["node"]))
        if body["do"] == "resume":
            return OnExpire.resume(codec.loads(base64.b64decode(body["value"])))
    except (ValueError, KeyError, TypeError) as exc:
        raise WaylineError(f"{where}: its on_expire {text!r} cannot be read ({exc})") from exc
    raise WaylineError(f"{where}: its on_expire {text!r} names no path wayline knows")


def wake_time(records: Iterable[InterruptRecord]) -> float | None:
    """When the first open record of a suspension wakes the run (None: only a person can)."""
    times = [
        r.expires_at
        for r in records
        if r.resume is None and r.on_expire is not None and r.expires_at is not None
    ]
    return min(times) if times else None


@dataclasses.dataclass(slots=True)
class Woken:
    """What the expired records of a claimed run do, for the loop to commit."""

    answers: list[InterruptRecord] = dataclasses.field(default_factory=list)
    """Timers answered (None) and approvals resumed with their declared value."""
    audit: list[AuditRecord] = dataclasses.field(default_factory=list)
    fail: str | None = None
    """The run fails with this reason (an approval's declared path)."""
    goto: str | None = None
    """The run leaves its waiting step and continues at this node."""

    def __bool__(self) -> bool:
        return bool(self.answers or self.fail or self.goto)


def due(
    tenant_id: str,
    run_id: str,
    records: Iterable[InterruptRecord],
    codec: Codec,
    now: float | None = None,
) -> Woken:
    """What the open records whose time has passed do now: the first failing or jumping
    approval decides the run's path (the others are not audited, they end with it)."""
    now = time.time() if now is None else now
    woken = Woken()
    expired = sorted(
        (
            r
            for r in records
            if r.resume is None and r.on_expire is not None and r.expires_at is not None
            if r.expires_at <= now
        ),
        key=lambda r: (r.expires_at or 0.0, r.task_id, r.idx),
    )
    for r in expired:
        if r.timer:
            woken.answers.append(dataclasses.replace(r, resume=codec.dumps(None)))
            continue
        assert r.on_expire is not None
        path = _decode(r.on_expire, codec, f"run {run_id!r}, interrupt {r.interrupt_id}")
        woken.audit.append(
            AuditRecord(
                tenant_id,
                run_id,
                actor=EXPIRY_ACTOR,
                action="expire",
                outcome={"fail": "failed", "resume": "resumed", "goto": "goto"}[path.do],
                digest=r.digest,
                detail=_detail(r, path),
            )
        )
        if path.do == "resume":
            woken.answers.append(dataclasses.replace(r, resume=codec.dumps(path.value)))
            continue
        if path.do == "fail":
            woken.fail = f"approval {r.interrupt_id} expired: {path.reason}"
        else:
            woken.goto = path.node
        woken.answers = [a for a in woken.answers if a.timer]  # the step is left anyway
        return woken
    return woken


def _detail(r: InterruptRecord, path: OnExpire) -> str:
    at = dt.datetime.fromtimestamp(r.expires_at or 0.0, dt.UTC).isoformat(timespec="seconds")
    what = {"fail": f"fail: {path.reason}", "resume": "resume", "goto": f"goto {path.node}"}
    return f"interrupt {r.interrupt_id} expired at {at}; on_expire {what[path.do]}"
