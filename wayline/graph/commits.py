"""Committing a run's steps: a folded superstep (its delta, a snapshot when due), finished
peers' pending writes, a suspension on questions, a breakpoint's pause, a status. Every
durable byte of a step goes out here, through the loop's commit sink."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from wayline.graph.algo import TaskResult, apply_step, fold_writes, sorted_results
from wayline.graph.channels import Channel
from wayline.graph.checkpoint import encode_results, state_digest, write_snapshot
from wayline.graph.interrupts import Asked, ask
from wayline.graph.mixin import as_loop
from wayline.graph.wakeups import wake_time
from wayline.store.memory_records import MemoryWrite
from wayline.store.records import (
    AuditRecord,
    BlobRecord,
    CommitBatch,
    DeltaRecord,
    PendingWriteRecord,
    RunStatus,
    RunUpdate,
    Wake,
)

if TYPE_CHECKING:
    from wayline.graph.loop import Event
    from wayline.graph.tasks import Folded, TaskOutcome
    from wayline.graph.types import Interrupt

__all__ = ["StepCommits", "staged_copy"]


class StepCommits:
    """Mixed into ``RunLoop``: what a step makes durable."""

    def _commit_step(
        self,
        results: list[TaskResult],
        folded: Folded | None = None,
        memory: list[MemoryWrite] | None = None,
    ) -> None:
        loop = as_loop(self)
        ordered = sorted_results(results)
        step = loop.step + 1
        threshold = loop.graph.blob_threshold
        enc = encode_results(loop.codec, ordered, step=step, threshold=threshold, seal=loop.seal)
        if folded is not None:  # the step's one task: its state writes are folded already
            staged = folded.channels
            next_tasks = fold_writes(staged, folded.rest)
        else:
            written = (k for r in ordered for k, _ in r.writes)
            staged = staged_copy(loop.channels, written, loop.graph.barriers)
            next_tasks = apply_step(staged, ordered)  # a failing reducer leaves loop.channels
        finished = not next_tasks
        batch = CommitBatch(
            deltas=[DeltaRecord(step, enc.payload, enc.channels)],
            blobs=enc.blobs,
            take_inbox=loop._taking_inbox(),
            clear_pending_through=step if loop.unfinished.rows_to_clear() else None,
            run=RunUpdate(
                status="done" if finished else "running",
                step=step,
                next_nodes=tuple(t.name for t in next_tasks),
                state_digest=state_digest(loop.codec, staged) if finished else None,
            ),
            memory=memory or [],
        )
        logs = loop.logs
        if loop.snapshots.due(step, len(enc.payload), enc.channels, loop.log_keys):
            logs = write_snapshot(
                batch,
                loop.codec,
                staged,
                next_tasks,
                logs,
                step=step,
                threshold=threshold,
                seal=loop.seal,
            )
            loop.snapshots.taken(step, len(batch.snapshots[-1].payload))
        if loop.creating is None:
            loop.sink.submit(batch)
        else:  # a new run's input step: its row goes in with it, held from then on
            batch.create, loop.creating = loop.creating, None
            loop.sink.commit_now(batch)
            loop.claimed = True
        loop.channels, loop.next_tasks, loop.step, loop.logs = staged, next_tasks, step, logs
        loop.unfinished.committed()

    def _save_pending(self, outcomes: list[TaskOutcome]) -> None:
        loop = as_loop(self)
        records = []
        blobs: list[BlobRecord] = []
        memory: list[MemoryWrite] = []
        for o in outcomes:
            if o.result is None or o.task.id in loop.unfinished.saved:
                continue
            memory.extend(o.memory)
            enc = encode_results(
                loop.codec,
                [o.result],
                step=o.task.step,
                threshold=loop.graph.blob_threshold,
                seal=loop.seal,
            )
            records.append(PendingWriteRecord(o.task.step, o.task.id, enc.payload, enc.channels))
            blobs.extend(enc.blobs)
            loop.unfinished.saved.add(o.task.id)
            loop.unfinished.pending[o.task.id] = o.result
        if records:
            loop.sink.submit(CommitBatch(pending=records, blobs=blobs, memory=memory))

    def _suspend(self, outcomes: list[TaskOutcome]) -> Iterator[Event]:
        loop = as_loop(self)
        asked = [Asked(o.task.step, o.task.id, o.task.spec.name, o.interrupts) for o in outcomes]
        records, audit, raised = ask(
            loop.tenant_id, loop.run_id, asked, loop.unfinished.interrupts, loop.codec
        )
        wake = wake_time(records)
        sleeping = all(r.timer for r in records)  # nobody is asked: it waits for a time
        loop.sink.submit(
            CommitBatch(
                interrupts=records,
                audit=audit,
                run=RunUpdate(
                    "pending" if sleeping else "interrupted",
                    loop.step,
                    tuple(t.name for t in loop.next_tasks),
                ),
                take_inbox=loop._taking_inbox(),
                wake=Wake(wake),
            )
        )
        loop.sink.flush()
        loop.sleeping_until = wake if sleeping else None
        loop.raised = raised
        if sleeping:
            return  # nobody is asked: no interrupt to report, only a time to wait for
        by_task: dict[str, list[Interrupt]] = {}  # one chunk per task that asked, as LangGraph
        for record, intr in zip(records, raised, strict=True):
            by_task.setdefault(record.task_id, []).append(intr)
        for asked_by_task in by_task.values():
            yield ("updates", {"__interrupt__": tuple(asked_by_task)})
        yield ("values", {**loop.values(), "__interrupt__": loop.raised})  # as LangGraph

    def pause(self) -> None:
        """Stop at a breakpoint (``interrupt_before``/``interrupt_after``): the run waits,
        interrupted, with its next tasks unchanged; ``invoke(None, config)`` continues it."""
        loop = as_loop(self)
        nodes = tuple(t.name for t in loop.next_tasks)
        loop.sink.submit(
            CommitBatch(
                run=RunUpdate("interrupted", loop.step, nodes),
                take_inbox=loop._taking_inbox(),
                wake=Wake(None),  # only a person continues it
            )
        )
        loop.sink.flush()

    def _submit_status(
        self,
        status: RunStatus,
        *,
        error: str | None = None,
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        loop = as_loop(self)
        nodes = tuple(t.name for t in loop.next_tasks)
        loop.sink.submit(
            CommitBatch(
                run=RunUpdate(status, loop.step, nodes, error=error),
                take_inbox=loop._taking_inbox(),
                audit=list(audit),
            )
        )

    def _taking_inbox(self) -> bool:
        """Whether this commit is the one that consumes the applied inbox (only the first)."""
        loop = as_loop(self)
        taking, loop.take_inbox = loop.take_inbox, False
        return taking


def staged_copy(
    channels: dict[str, Channel], written: Iterable[str], barriers: Iterable[str]
) -> dict[str, Channel]:
    """A copy of ``channels`` to fold into, copying only what the fold can change (written
    channels and the graph's join barriers); the live channels stay as they were if the
    fold fails."""
    staged = dict(channels)
    for key in (*written, *barriers):
        if key in channels and staged[key] is channels[key]:
            staged[key] = channels[key].copy()
    return staged
