"""Questions a run asks (``interrupt()``) and the answers it is given: which open question a
resume answers, and what a suspension records. Pure functions over records; the run loop
commits what they return.

Also ``UnfinishedStep``: what a superstep that has not committed leaves behind (the writes
of peers that finished, the questions asked), which the next commit of the run clears.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from wayline.codec import Codec
from wayline.errors import ResumeError, WaylineError
from wayline.graph.algo import TaskResult
from wayline.graph.types import Interrupt, OnExpire
from wayline.graph.wakeups import encode_on_expire
from wayline.store.records import TIMER, AuditRecord, InterruptRecord

__all__ = ["Asked", "UnfinishedStep", "answer", "ask"]


@dataclasses.dataclass(slots=True)
class UnfinishedStep:
    """The rows of a superstep that has not committed: finished peers' writes (kept, so
    those peers do not run again) and the questions its tasks asked, with any answers."""

    pending: dict[str, TaskResult] = dataclasses.field(default_factory=dict)
    """Task id -> writes of a task that finished."""
    saved: set[str] = dataclasses.field(default_factory=set)
    """Task ids whose writes are in the store already."""
    interrupts: list[InterruptRecord] = dataclasses.field(default_factory=list)
    stale: bool = False
    """Rows of a discarded unfinished step are still stored: the next commit clears them."""

    def discard(self) -> None:
        """New input or an edit replaces the step: its rows go at the next commit."""
        self.stale = self.stale or bool(self.saved or self.interrupts)
        self.pending, self.saved, self.interrupts = {}, set(), []

    def rows_to_clear(self) -> bool:
        """Whether the next commit must delete stored rows of an unfinished step (a DELETE
        that finds nothing still costs a statement: a round trip on PostgreSQL)."""
        found = self.stale or bool(self.saved or self.interrupts)
        self.stale = False
        return found

    def committed(self) -> None:
        self.pending, self.saved, self.interrupts = {}, set(), []

    def answers_for(self, task_id: str) -> list[InterruptRecord]:
        """The answered questions of a task, in the order it asked them."""
        return sorted(
            (i for i in self.interrupts if i.task_id == task_id and i.resume is not None),
            key=lambda i: i.idx,
        )


def answer(
    run_id: str, open_: list[InterruptRecord], resume: Any, codec: Codec
) -> list[InterruptRecord]:
    """The open questions a resume value answers, with the answers set; ``ResumeError``
    when it answers none, fits none, or an approval must be decided by an authorized actor."""
    timers = [i for i in open_ if i.timer]
    open_ = [i for i in open_ if not i.timer]
    if not open_ and timers:
        until = min(i.expires_at or 0.0 for i in timers)
        raise ResumeError(
            f"run {run_id!r} is sleeping (a durable timer) until {until:.3f} (Unix time): "
            "nothing answers a timer, its time does; a worker continues the run then, or "
            "give it new input to replace the waiting step"
        )
    if not open_:
        raise ResumeError(
            f"run {run_id!r} has no pending interrupt to resume; "
            "call invoke(None, config) to continue it or pass a new input"
        )
    governed = [i.interrupt_id for i in open_ if i.governed]
    if governed:
        raise ResumeError(
            f"run {run_id!r} waits for an approval ({', '.join(governed)}): decide it "
            "with Wayline(store).resume(run_id, decision, actor=Actor(...), digest=...), "
            "which checks who may decide; then continue the run"
        )
    by_id = {i.interrupt_id: i for i in open_}
    if isinstance(resume, Mapping) and resume and set(resume) <= set(by_id):
        answers = {iid: resume[iid] for iid in resume}
    elif len(open_) == 1:
        answers = {open_[0].interrupt_id: resume}
    else:
        raise ResumeError(
            "When there are multiple pending interrupts, you must specify the interrupt id "
            f"when resuming. Run {run_id!r} has {len(open_)} pending interrupts; resume with "
            "Command(resume={interrupt_id: value, ...}) naming the ones you answer "
            f"(pending ids: {sorted(by_id)})"
        )
    return [
        dataclasses.replace(by_id[iid], resume=codec.dumps(value)) for iid, value in answers.items()
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class Asked:
    """A task's questions as raised: the task, its node, and (index, interrupt) pairs."""

    step: int
    task_id: str
    node: str
    interrupts: tuple[tuple[int, Interrupt], ...]


def ask(
    tenant_id: str,
    run_id: str,
    asked: Iterable[Asked],
    earlier: Iterable[InterruptRecord],
    codec: Codec,
) -> tuple[list[InterruptRecord], list[AuditRecord], tuple[Interrupt, ...]]:
    """What a suspension records: each question with the digest a decision must name, an
    audit line per question, and the interrupts as the caller sees them. A question asked
    again on a re-run keeps its first expiry."""
    before_by_id = {i.interrupt_id: i for i in earlier}
    records: list[InterruptRecord] = []
    audit: list[AuditRecord] = []
    raised: list[Interrupt] = []
    for task in asked:
        for idx, intr in task.interrupts:
            value = codec.dumps(intr.value)
            digest = hashlib.sha256(value).hexdigest()
            before = before_by_id.get(intr.id)
            expires = before.expires_at if before and before.expires_at else intr.expires_at
            records.append(
                InterruptRecord(
                    step=task.step,
                    task_id=task.task_id,
                    idx=idx,
                    interrupt_id=intr.id,
                    value=value,
                    resume=None,
                    digest=digest,
                    approvers=intr.approvers,
                    expires_at=expires,
                    cls=intr.cls,
                    on_expire=_on_expire(intr.on_expire, codec),
                )
            )
            raised.append(dataclasses.replace(intr, expires_at=expires, digest=digest))
            if intr.on_expire == TIMER:
                continue  # a timer: nobody is asked, its time answers it
            audit.append(
                AuditRecord(
                    tenant_id,
                    run_id,
                    actor=f"node:{task.node}",
                    action="request",
                    outcome="pending",
                    digest=digest,
                    detail=_approvers(intr.approvers),
                )
            )
    return records, audit, tuple(raised)


def _on_expire(on_expire: Any, codec: Codec) -> str | None:
    if on_expire is None or on_expire == TIMER:
        return on_expire  # type: ignore[no-any-return]
    if not isinstance(on_expire, OnExpire):
        raise WaylineError(
            f"on_expire={on_expire!r} is not a path: pass OnExpire.fail(reason), "
            "OnExpire.resume(value) or OnExpire.goto(node)"
        )
    return encode_on_expire(on_expire, codec)


def _approvers(approvers: tuple[str, ...] | None) -> str:
    return "approvers: " + (", ".join(approvers) if approvers is not None else "anyone")
