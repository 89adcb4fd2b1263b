"""Notifications that happen once: a run waits for an approval, ends, or parks on an effect.

Each notification is an effect in the ledger (``kind="notify"``). Its intent is written in
the very commit that moves the run (the suspension, the last step, the park), under a key
derived from the run, the event, its step and the claim's fencing token, so a kill before
the commit leaves no notification and a kill after it leaves one to send; a replay makes
no commit of that kind, so it never repeats one. A sender thread in every worker delivers
pending ones (``POST`` to the webhook, signed with HMAC-SHA256), retrying with exponential
backoff; one that fails ``max_attempts`` times is FAILED with the last error, visible in
``wayline effects list RUN`` like any failed effect. Delivery is at least once: a sender
killed between the POST and its record resends under the same ``X-Wayline-Key``, which a
receiver deduplicates on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from wayline.ids import derive_id
from wayline.store.base import Store
from wayline.store.records import CommitBatch, EffectRecord, EffectWrite, RunRecord
from wayline.store.sql_store import SQLStore

__all__ = ["WebhookNotifier", "deliver_pending", "notifying", "sign"]

log = logging.getLogger("wayline.notify")

KIND = "notify"
STALE_SECONDS = 60.0
"""A notification EXECUTING this long was left by a dead sender: it is sent again."""

Q_OUTBOX = """
SELECT {columns} FROM effects
WHERE kind = 'notify' AND status IN ('PENDING', 'EXECUTING')
    AND (CAST(? AS TEXT) IS NULL OR tenant_id = ?)
ORDER BY updated_at LIMIT ?
"""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Wayline-Signature`` of a delivery: HMAC-SHA256 over ``timestamp.body``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


@dataclasses.dataclass(frozen=True, kw_only=True)
class WebhookNotifier:
    """Where a worker's notifications go: ``url`` (POST, JSON), signed with ``secret``.

    Headers: ``X-Wayline-Event`` (``approval.requested``, ``run.ended``, ``effect.parked``),
    ``X-Wayline-Key`` (the notification's stable key: deduplicate on it),
    ``X-Wayline-Timestamp`` and ``X-Wayline-Signature`` (``sign(secret, timestamp, body)``).
    """

    url: str | None
    """Where every notification goes (None: only to the webhooks runs were started with)."""
    secret: str
    timeout: float = 5.0
    max_attempts: int = 5
    initial_delay: float = 0.5
    max_delay: float = 60.0

    def delay(self, attempt: int) -> float:
        """Seconds before try ``attempt + 1`` after ``attempt`` failed ones."""
        return float(min(self.max_delay, self.initial_delay * 2 ** max(0, attempt - 1)))

    def post(self, url: str, key: str, event: str, body: bytes) -> None:
        """Deliver once; raise on anything but a 2xx answer."""
        stamp = str(int(time.time()))
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Wayline-Event": event,
                "X-Wayline-Key": key,
                "X-Wayline-Timestamp": stamp,
                "X-Wayline-Signature": sign(self.secret, stamp, body),
            },
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as answer:
            if not 200 <= answer.status < 300:
                raise urllib.error.HTTPError(url, answer.status, "refused", {}, None)  # type: ignore[arg-type]


# -- intents, in the run's commit ---------------------------------------------------------


def _events(run: RunRecord, batch: CommitBatch) -> list[tuple[str, dict[str, Any]]]:
    """The notifications a batch's status change makes (none for a plain step)."""
    update = batch.run
    if update is None:
        return []
    base: dict[str, Any] = {"tenant": run.tenant_id, "run_id": run.run_id}
    base |= {"graph": run.graph_name, "step": update.step, "status": update.status}
    if update.status == "interrupted":
        asked = [i for i in batch.interrupts if i.resume is None and i.governed]
        if not asked:
            return []  # a breakpoint or a plain question: nobody is waited for by name
        questions = [
            {
                "interrupt_id": i.interrupt_id,
                "digest": i.digest,
                "approvers": list(i.approvers) if i.approvers is not None else None,
                "expires_at": i.expires_at,
            }
            for i in asked
        ]
        return [("approval.requested", {**base, "approvals": questions})]
    if update.status in ("done", "failed", "cancelled"):
        return [("run.ended", {**base, "error": update.error})]
    if update.status == "parked":
        return [("effect.parked", {**base, "error": update.error})]
    return []


HOOK = "notify-target"
"""The kind of the record that keeps a run's ``webhook=`` (its URL, with the inbox's first
commit): a worker that takes the run over finds it there, so a kill loses no webhook."""


def intents(
    run: RunRecord, token: int, batch: CommitBatch, targets: Sequence[tuple[str, str | None]]
) -> list[EffectWrite]:
    """The batch's notifications, one per target: (key prefix, URL; None: the notifier's)."""
    now = time.time()
    writes = []
    for (event, payload), (prefix, url) in ((e, t) for e in _events(run, batch) for t in targets):
        step = int(payload["step"])
        key = derive_id(prefix, run.tenant_id, run.run_id, KIND, event, step, token)
        if url is not None and event == "run.ended":
            key = derive_id(prefix, KIND, event)  # a webhook is told its run ended once
        body = json.dumps({"event": event, **payload}, sort_keys=True).encode()
        if url is not None:
            body = json.dumps({"event": event, "url": url, **payload}, sort_keys=True).encode()
        record = EffectRecord(
            tenant_id=run.tenant_id,
            key=key,
            run_id=run.run_id,
            kind=KIND,
            node="__notify__",
            step=step,
            name=event,
            seq=0,
            attempt=0,
            request_digest=hashlib.sha256(body).hexdigest(),
            status="PENDING",
            fencing_token=token,
            result=body,
            created_at=now,
            updated_at=now,
        )
        writes.append(EffectWrite(record, None))
    return writes


Committer = Callable[[str, str, int, CommitBatch], None]


def notifying(
    commit: Committer,
    store: Store,
    run: RunRecord,
    wake: threading.Event,
    *,
    everything: bool,
    webhook: str | None,
    with_inbox: bool = True,
) -> Committer:
    """``commit`` that adds each batch's notification intents to it (one transaction):
    for the worker's notifier (``everything``), and for each webhook the run was started
    with and has not been told of its end yet (``webhook``: this claim's invocation brings
    one, kept with the commit that takes the inbox; ``with_inbox`` False: with this claim's
    first commit, for an engine whose own writes take the inbox and keep the webhook until
    then, LangGraph's: ``wayline.langgraph.engine``). A webhook already kept and not yet
    told of the end is not kept twice: a takeover that finds it again tells it once."""
    targets: list[tuple[str, str | None]] = [("", None)] if everything else []
    done = set()
    for e in store.list_effects(run.tenant_id, run.run_id) if run.step >= 0 else []:
        if e.kind == HOOK and e.result is not None:
            targets.append((e.key, json.loads(e.result)["url"]))
        elif e.kind == KIND and e.name == "run.ended":
            done.add(e.key)
    targets = [t for t in targets if t[1] is None or derive_id(t[0], KIND, "run.ended") not in done]
    pending_hook = None if any(url == webhook for _, url in targets) else webhook

    def commit_with_intents(tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        nonlocal pending_hook, targets
        if pending_hook is not None and (batch.take_inbox or not with_inbox):
            record = EffectRecord(
                tenant_id=tenant_id,
                key=derive_id(tenant_id, run_id, HOOK, token),
                run_id=run_id,
                kind=HOOK,
                node="__notify__",
                step=batch.run.step if batch.run is not None else run.step,
                name="webhook",
                seq=0,
                attempt=0,
                request_digest=hashlib.sha256(pending_hook.encode()).hexdigest(),
                status="SUCCEEDED",
                fencing_token=token,
                result=json.dumps({"url": pending_hook}).encode(),
            )
            batch.effects.append(EffectWrite(record, None))
            targets = [*targets, (record.key, pending_hook)]
            pending_hook = None
        added = intents(run, token, batch, targets)
        if added:
            batch.effects.extend(added)
        commit(tenant_id, run_id, token, batch)
        if added:
            wake.set()
            if any(w.record.name == "run.ended" for w in added):
                targets = [t for t in targets if t[1] is None]

    return commit_with_intents


# -- delivery -----------------------------------------------------------------------------


def _outbox(store: SQLStore, tenant_id: str | None, limit: int) -> list[EffectRecord]:
    query = Q_OUTBOX.format(columns=", ".join(store.q.EFFECT_COLUMN_NAMES))
    query = query.replace("?", store.placeholder)
    rows = store._read(query, (tenant_id, tenant_id, limit), tenant=tenant_id)
    return [store._effect(r) for r in rows]


def deliver_pending(
    store: Store, notifier: WebhookNotifier, *, tenant_id: str | None = None, limit: int = 50
) -> int:
    """Send the due notifications once each; returns how many were delivered."""
    if not isinstance(store, SQLStore):
        return 0
    now = time.time()
    sent = 0
    for rec in _outbox(store, tenant_id, limit):
        if rec.status == "PENDING" and rec.updated_at + notifier.delay(rec.attempt) > now:
            continue  # backing off
        if rec.status == "EXECUTING" and rec.updated_at > now - STALE_SECONDS:
            continue  # another sender has it
        taking = dataclasses.replace(rec, status="EXECUTING", attempt=rec.attempt + 1)
        if not store.put_effect(rec.run_id, None, taking, expect=rec.status):
            continue  # another sender took it first
        body = rec.result or b"{}"
        url = json.loads(body).get("url") or notifier.url
        try:
            if url is None:
                raise ValueError("no webhook URL for it (the notifier has none)")
            notifier.post(url, rec.key, rec.name, body)
        except (OSError, ValueError) as exc:  # refused, unreachable, timed out
            final = taking.attempt >= notifier.max_attempts
            error = f"{type(exc).__name__}: {exc} (attempt {taking.attempt})"
            after = dataclasses.replace(
                taking, status="FAILED" if final else "PENDING", error=error
            )
            store.put_effect(rec.run_id, None, after, expect="EXECUTING")
            (log.error if final else log.warning)("notification %s: %s", rec.key, error)
            continue
        store.put_effect(
            rec.run_id, None, dataclasses.replace(taking, status="SUCCEEDED"), expect="EXECUTING"
        )
        sent += 1
    return sent


def send_loop(
    store: Store,
    notifier: WebhookNotifier,
    *,
    tenant_id: str | None,
    stopping: threading.Event,
    wake: threading.Event,
    poll_interval: float,
) -> None:
    """A worker's sender: deliver, then wait for a new intent or the next poll."""
    while not stopping.is_set():
        try:
            deliver_pending(store, notifier, tenant_id=tenant_id)
        except Exception as exc:  # the store is away: try again at the next poll
            log.error("notifications could not be sent: %s", exc)
        wake.wait(min(poll_interval, notifier.initial_delay))
        wake.clear()


def sent(store: Store, tenant_id: str, run_ids: Sequence[str]) -> list[EffectRecord]:
    """The notifications of these runs (for tests and operators)."""
    return [e for r in run_ids for e in store.list_effects(tenant_id, r) if e.kind == KIND]
