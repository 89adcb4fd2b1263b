"""The effect ledger: at-least-once delivery, once-only outcome.

For each ``ctx.effect`` call: the intent is durable (status EXECUTING, with the key, the
request digest and the run's fencing token) before ``fn(key)`` runs, and the outcome is
durable before the node goes on. Whatever the run's durability mode, these writes are
committed at once, never held by a sink: through the worker's group committer when the run
is a worker's (so the intents of the runs it holds share an fsync, as their steps do), else
straight to the store. A re-executed node meets its own records again, because keys are
derived from (tenant, run, step, task, name, seq), never random:

- SUCCEEDED: the recorded result is returned and ``fn`` is not called;
- FAILED: the recorded reason is raised (``EffectFailed``);
- EXECUTING or UNKNOWN (a worker died between dispatch and record): the outcome is
  unknown. ``reconcile(key)`` asks the provider; ``idempotent=True`` resends under the
  same key; with neither the run parks for an operator. It is never resent under a new key.

An exception raised by ``fn`` is judged the same way (``wayline.effects.outcomes``): it is
an unknown outcome unless the failure is definite (``EffectDeclined``, the policy's
``definite_on``), the effect is idempotent, or ``reconcile`` finds no record; a programming
error (NameError, TypeError...) fails the node as a code error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable
from typing import Any, Final

from wayline.codec import Codec
from wayline.effects.outcomes import judge
from wayline.effects.retry import RetryPolicy, retry_any
from wayline.errors import (
    CodecError,
    EffectError,
    EffectFailed,
    EffectIntentMismatch,
    EffectOutcomeUnknown,
)
from wayline.ids import derive_id, incarnation_at
from wayline.store.base import Store
from wayline.store.records import CommitBatch, EffectRecord, EffectStatus, EffectWrite
from wayline.store.writer import Committer

__all__ = ["NOT_FOUND", "EffectLedger"]


class _NotFound:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_FOUND"


NOT_FOUND: Final[Any] = _NotFound()
"""What a ``reconcile`` hook returns when the provider has no record of the key: the effect
never happened, so sending it again under the same key is safe."""

DEFAULT_RETRY = RetryPolicy(max_interval=30.0, retry_on=retry_any)


class EffectLedger:
    """The effects and recorded calls of one task execution."""

    def __init__(
        self,
        store: Store,
        codec: Codec,
        *,
        tenant_id: str,
        run_id: str,
        token: int,
        node: str,
        step: int,
        task_id: str,
        incarnation: str = "",
        committer: Committer | None = None,
    ) -> None:
        self.store = store
        self.committer: Committer = committer or store.commit
        """How the records are made durable: ``Store.commit`` or a worker's group commit."""
        self.codec = codec
        self.tenant_id = tenant_id
        self.run_id = run_id
        self.token = token
        self.node = node
        self.step = step
        self.task_id = task_id
        self.incarnation = incarnation
        """The run's incarnation: a run started again under a purged run's id derives new
        keys, so a provider deduplicating by key never hands back the purged run's effect."""
        self._seq: dict[tuple[str, str], int] = {}

    def restart(self) -> None:
        """The node runs again (a node-level retry): its calls get the same keys again."""
        self._seq.clear()

    def effect(
        self,
        name: str,
        fn: Callable[[str], Any],
        *,
        request: Any = None,
        key: str | None = None,
        reconcile: Callable[[str], Any] | None = None,
        idempotent: bool = False,
        retry: RetryPolicy | None = None,
        classified: str | None = None,
    ) -> Any:
        seq = self._next_seq("effect", name)
        key = key or self._derive_key("effect", name, seq)
        digest = self._digest(name, request)
        rec = self.store.get_effect(self.tenant_id, key)
        if rec is None:
            rec = self._new(key, "effect", name, seq, digest, classified)
            expect: EffectStatus | None = None
        else:
            if rec.kind != "effect" or rec.request_digest != digest:
                raise EffectIntentMismatch(
                    f"effect key {key!r} was first used for another request (node "
                    f"{rec.node!r}, effect {rec.name!r}); a changed request is a new intent: "
                    "give it a new key"
                )
            if rec.status == "SUCCEEDED":
                return self._result(rec)
            if rec.status == "FAILED":
                raise EffectFailed(key, rec.error or "failed", self.run_id)
            expect = rec.status
            if rec.status == "EXECUTING" and rec.run_id != self.run_id and not idempotent:
                self._refuse_if_in_flight(rec)  # an idempotent resend is safe even then
            if rec.status in ("EXECUTING", "UNKNOWN"):
                if reconcile is not None:
                    found = reconcile(key)
                    if found is not NOT_FOUND:
                        return self._succeed(rec, expect, found)
                elif not idempotent:
                    if rec.status == "EXECUTING":
                        self._write(dataclasses.replace(rec, status="UNKNOWN"), "EXECUTING")
                    raise EffectOutcomeUnknown(key)
        return self._attempt(
            rec, expect, fn, retry or DEFAULT_RETRY, idempotent=idempotent, reconcile=reconcile
        )

    def record(self, name: str, fn: Callable[[], Any], classified: str | None = None) -> Any:
        """Run a non-deterministic call once; a re-executed node gets the recorded value."""
        seq = self._next_seq("record", name)
        key = self._derive_key("record", name, seq)
        rec = self.store.get_effect(self.tenant_id, key)
        if rec is not None and rec.status == "SUCCEEDED":
            return self._result(rec)
        value = fn()
        self._succeed(self._new(key, "record", name, seq, "", classified), None, value)
        return value

    def recorded(self, name: str) -> tuple[bool, Any]:
        """Whether this task's first ``record(name, ...)`` is on record, and its value; a
        read only (no call, no record, no sequence number taken)."""
        rec = self.store.get_effect(self.tenant_id, self._derive_key("record", name, 0))
        if rec is not None and rec.status == "SUCCEEDED":
            return True, self._result(rec)
        return False, None

    # -- internals --------------------------------------------------------------------

    def _derive_key(self, kind: str, name: str, seq: int) -> str:
        """Stable across retries and resumes of this run; new for a new incarnation (runs
        created before incarnations existed keep their keys)."""
        head = (incarnation_at(self.incarnation, self.step),) if self.incarnation else ()
        return "wl-" + derive_id(*head, self.task_id, kind, name, seq)

    def _refuse_if_in_flight(self, rec: EffectRecord) -> None:
        """A business key shared with another run whose worker still holds its lease: that
        worker may be mid-call, so this one must not resend or reconcile yet."""
        owner = self.store.get_run(self.tenant_id, rec.run_id)
        live = owner is not None and owner.lease_owner is not None
        if live and owner is not None and (owner.lease_expires_at or 0) > time.time():
            raise EffectError(
                f"effect {rec.key!r} is in flight in run {rec.run_id!r}, whose worker holds "
                "its lease; this task fails now and its retry will find the outcome"
            )

    def _attempt(
        self,
        rec: EffectRecord,
        expect: EffectStatus | None,
        fn: Callable[[str], Any],
        policy: RetryPolicy,
        *,
        idempotent: bool,
        reconcile: Callable[[str], Any] | None,
    ) -> Any:
        """Dispatch under the recorded intent; an exception is judged by the table of
        ``wayline.effects.outcomes``: only a definite failure, an idempotent effect or a
        reconcile that found nothing is ever sent again."""
        attempt = rec.attempt  # cumulative in the record; the budget counts this dispatch
        tries = 0
        while True:
            attempt += 1
            tries += 1
            current = dataclasses.replace(
                rec, attempt=attempt, status="EXECUTING", result=None, error=None
            )
            self._write(current, expect)  # the intent is durable before the dispatch
            try:
                value = fn(rec.key)
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                verdict = judge(
                    exc, policy, idempotent=idempotent, reconciles=reconcile is not None
                )
                if verdict == "code":  # the calling code is wrong: fail the node with it
                    self._write(
                        dataclasses.replace(current, status="PENDING", error=reason), "EXECUTING"
                    )
                    raise
                if verdict == "reconcile" and reconcile is not None:
                    found = reconcile(rec.key)
                    if found is not NOT_FOUND:
                        return self._succeed(current, "EXECUTING", found)
                elif verdict == "unknown":  # never resent on a guess: an operator decides
                    self._write(
                        dataclasses.replace(current, status="UNKNOWN", error=reason), "EXECUTING"
                    )
                    raise EffectOutcomeUnknown(rec.key, reason) from exc
                if policy.should_retry(tries, exc, retry_any):
                    self._write(
                        dataclasses.replace(current, status="PENDING", error=reason), "EXECUTING"
                    )
                    expect = "PENDING"
                    time.sleep(policy.delay(attempt))
                    continue
                self._write(
                    dataclasses.replace(current, status="FAILED", error=reason), "EXECUTING"
                )
                raise EffectFailed(rec.key, reason, self.run_id) from exc
            return self._succeed(current, "EXECUTING", value)

    def _succeed(self, rec: EffectRecord, expect: EffectStatus | None, value: Any) -> Any:
        try:
            result: bytes | None = self.codec.dumps(value)
            error = None
        except CodecError as exc:  # the effect happened: record that, then say what is wrong
            result, error = None, f"result could not be stored: {exc}"
        self._write(
            dataclasses.replace(rec, status="SUCCEEDED", result=result, error=error), expect
        )
        if error is not None:
            raise CodecError(f"effect {rec.key!r} succeeded but its {error}; return plain data")
        return value

    def _result(self, rec: EffectRecord) -> Any:
        if rec.result is None and rec.error:
            raise CodecError(f"effect {rec.key!r} succeeded but its {rec.error}")
        return None if rec.result is None else self.codec.loads(rec.result)

    def _write(self, rec: EffectRecord, expect: EffectStatus | None) -> None:
        """Durable on return, fenced by the run's token; ``EffectRecordChanged`` when the
        stored record is no longer in status ``expect``."""
        rec = dataclasses.replace(rec, fencing_token=self.token)
        batch = CommitBatch(effects=[EffectWrite(rec, expect)])
        self.committer(self.tenant_id, self.run_id, self.token, batch)

    def _new(
        self, key: str, kind: str, name: str, seq: int, digest: str, cls: str | None = None
    ) -> EffectRecord:
        return EffectRecord(
            tenant_id=self.tenant_id,
            key=key,
            run_id=self.run_id,
            kind=kind,
            node=self.node,
            step=self.step,
            name=name,
            seq=seq,
            attempt=0,
            request_digest=digest,
            status="PENDING",
            fencing_token=self.token,
            cls=cls or "default",
        )

    def _next_seq(self, kind: str, name: str) -> int:
        seq = self._seq.get((kind, name), 0)
        self._seq[(kind, name)] = seq + 1
        return seq

    def _digest(self, name: str, request: Any) -> str:
        try:
            data = self.codec.dumps([name, request])
        except CodecError as exc:
            raise CodecError(f"effect {name!r}: its request cannot be digested: {exc}") from None
        return hashlib.sha256(data).hexdigest()
