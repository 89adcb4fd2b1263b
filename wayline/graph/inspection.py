"""Reading a run back: its state at a step (``get_state``), its history, and ``verify``,
which reconstructs a finished run and compares it with the digest its last commit
recorded (invariant 3: replay is exact)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wayline.errors import ReplayDivergenceError, RunNotFoundError, WaylineError
from wayline.graph import travel
from wayline.graph.algo import TaskResult, snapshot_order, with_pending
from wayline.graph.branches import thread_head
from wayline.graph.checkpoint import BlobCache, decode_results, reconstruct, state_digest
from wayline.graph.input_checkpoint import (
    input_config,
    input_snapshot,
    listed_parent,
    step_results,
)
from wayline.graph.lg_shape import checkpoint_metadata, snapshot_task_result
from wayline.graph.mixin import as_graph
from wayline.graph.run_config import checkpoint_config
from wayline.graph.run_config import run_ids as _ids
from wayline.graph.schema import ROOT
from wayline.graph.snapshot_source import step_source, step_time
from wayline.graph.subgraph import with_child_configs, with_child_states
from wayline.graph.subgraph_travel import (
    by_namespace,
    child_naming,
    name_children,
    subgraph_named,
)
from wayline.graph.task_errors import task_errors
from wayline.graph.tasks import defer_split
from wayline.graph.types import Interrupt, PregelTask, ReadInfo, StateSnapshot
from wayline.graph.updates import history
from wayline.ids import RunRef, derive_id
from wayline.interop.lg_paths import lg_path
from wayline.store.records import AuditRecord, InterruptRecord

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph
    from wayline.graph.loop import RunLoop

__all__ = ["Inspection", "Verification"]


@dataclasses.dataclass(frozen=True, slots=True)
class Verification:
    """The result of ``verify``: the committed digest against the reconstructed one."""

    run_id: str
    step: int
    expected: str
    actual: str
    snapshot_step: int | None
    folds: int
    rows_read: int

    @property
    def ok(self) -> bool:
        return self.expected == self.actual


class Inspection:
    """Mixed into ``CompiledGraph``: reading runs."""

    # -- inspecting -------------------------------------------------------------------

    def get_state(self, config: Mapping[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        """The state at the run's last committed step (or at ``configurable.step``); with
        ``subgraphs=True`` each task running a subgraph carries the subgraph's state."""
        graph = as_graph(self)
        asked, config = config, by_namespace(graph, config)
        child = subgraph_named(graph, config)
        if child is not None:  # a subgraph's checkpoint: its own state
            found = child.get_state(config, subgraphs=subgraphs)
            naming = child_naming(graph.store, asked, _ids(config, create=False)[1])
            if naming is None:
                return found
            found = naming(found)  # named as it was asked for
            if not subgraphs:
                return found
            return name_children(found, found.config["configurable"]["checkpoint_map"])
        snapshot = graph._state(config)
        if not subgraphs:
            return with_child_configs(graph, snapshot)
        return name_children(with_child_states(graph, snapshot))

    def _state(self, config: Mapping[str, Any]) -> StateSnapshot:
        graph = as_graph(self)
        tenant, run_id = _ids(config, create=False)
        run_id = thread_head(graph.store, tenant, run_id, config.get("configurable") or {})
        run = graph.store.get_run(tenant, run_id)
        cfg = RunRef(tenant, run_id).config()
        if run is None:
            return StateSnapshot({}, (), cfg, {}, None, None, ())
        named = travel.requested_step(config, tenant, run_id)
        at = run.step if named is None else min(named, run.step)
        if travel.names_input_checkpoint(config, tenant, run_id):
            return input_snapshot(graph, tenant, run, at)
        rec = reconstruct(graph.store, graph.codec, graph.new_channels(), tenant, run_id, at)
        interrupts: list[Interrupt] = []
        tasks = []
        waiting: list[str] = []  # next: the tasks with no saved writes yet
        latest = at == run.step
        pending = {}
        if latest:
            resolve = BlobCache(graph.store, tenant)
            pending = {
                p.task_id: decode_results(graph.codec, p.payload, resolve)[0]
                for p in graph.store.load_pending(tenant, run_id, at + 1)
            }
        # the latest step's open questions; a past step's tasks show what they asked there
        # (answered questions stay with their step, as LangGraph's interrupt writes)
        records = graph.store.load_interrupts(tenant, run_id, at + 1)
        # as LangGraph's: a past step's tasks carry what they wrote (the next step's delta)
        if latest:
            done_by = pending
        elif run.durability == "exit":
            done_by = _saved_at_interrupt(graph, tenant, run_id, at + 1, records)
        else:
            done_by = step_results(graph, tenant, run_id, at + 1)
        failed = task_errors(graph.store, tenant, run_id, at + 1)
        single = ROOT if graph.schema.kind == "root" else None  # a single-value state
        listed = snapshot_order(defer_split(rec.next_tasks, graph.nodes)[0], graph.nodes)
        for spec in listed:  # a held (deferred) task is not next
            task_id = derive_id(tenant, run_id, at + 1, *spec.path)
            mine = tuple(
                Interrupt(
                    graph.codec.loads(r.value),
                    r.interrupt_id,
                    r.approvers,
                    r.expires_at,
                    r.digest,
                    r.cls,
                )
                for r in records
                if r.task_id == task_id and (r.resume is None or not latest)
            )
            interrupts.extend(mine)
            done = done_by.get(task_id)
            result = snapshot_task_result(done.writes, single) if done else None
            error = failed.get(task_id)
            path = lg_path(spec.path)
            tasks.append(PregelTask(task_id, spec.name, path, error, mine, result=result))
            if task_id not in pending or named is not None:
                waiting.append(spec.name)
        source = step_source(graph.store, tenant, run_id, at)
        parent = checkpoint_config(tenant, run_id, at - 1) if at > 0 else None
        if source == "input":  # as LangGraph's: START applied it, after the input checkpoint
            source, parent = "loop", input_config(tenant, run_id, at)
        if run.durability == "exit":  # its parent: the last invocation's, as listed
            parent = listed_parent(graph.store, tenant, run, at)
        info = ReadInfo(
            status=run.status if latest else "running",
            graph=run.graph_name,
            graph_version=run.graph_version,
            snapshot_step=rec.snapshot_step,
            replayed_steps=rec.folds,
            rows_read=rec.rows_read,
        )
        updated = dt.datetime.fromtimestamp(run.updated_at, dt.UTC).isoformat()
        # as LangGraph: read at the thread's head, the values show what finished tasks of
        # the unfinished step wrote and a finished task is not next; a named checkpoint
        # shows the checkpoint itself (its tasks still carry their results)
        shown = with_pending(rec.channels, () if named is not None else pending.values())
        return StateSnapshot(
            values=graph.schema.present(shown),
            next=tuple(waiting),
            config=checkpoint_config(tenant, run_id, at),
            metadata=checkpoint_metadata(source, at),
            created_at=updated if latest else step_time(graph.store, tenant, run_id, at),
            parent_config=parent,
            tasks=tuple(tasks),
            interrupts=tuple(interrupts),
            read_info=info,
        )

    def get_state_history(
        self,
        config: Mapping[str, Any],
        *,
        filter: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """Snapshots from the newest committed step (or the one before ``before``) back
        to the input step; ``filter`` keeps those whose metadata holds its items."""
        graph = as_graph(self)
        asked, config = config, by_namespace(graph, config)
        child = subgraph_named(graph, config)  # a subgraph's checkpoint: its own history
        found = history(child or graph, config, filter=filter, before=before, limit=limit)
        naming = None
        if child is not None:
            naming = child_naming(graph.store, asked, _ids(config, create=False)[1])
        return found if naming is None else map(naming, found)  # named as it was asked for

    def verify(self, config: Mapping[str, Any]) -> Verification:
        """Reconstruct a finished run from the store and compare it with the digest its
        final commit recorded."""
        graph = as_graph(self)
        tenant, run_id = _ids(config, create=False)
        run = graph.store.get_run(tenant, run_id)
        if run is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r}")
        if run.state_digest is None:
            raise WaylineError(
                f"run {run_id!r} is {run.status} and has no recorded final digest yet; "
                "verify it once it has finished"
            )
        rec = reconstruct(graph.store, graph.codec, graph.new_channels(), tenant, run_id, run.step)
        actual = state_digest(graph.codec, rec.channels)
        return Verification(
            run_id, run.step, run.state_digest, actual, rec.snapshot_step, rec.folds, rec.rows_read
        )

    def _sample_verify(self, loop: RunLoop) -> None:
        """Verify a deterministic sample of finished runs (``compile(verify_sample=...)``)."""
        graph = as_graph(self)
        if not loop.finished or graph.verify_sample <= 0:
            return
        if int(derive_id(loop.tenant_id, loop.run_id)[:8], 16) >= graph.verify_sample * 2**32:
            return
        result = graph.verify(loop.ref.config())
        if not result.ok:
            error = ReplayDivergenceError(
                f"run {loop.run_id!r} reconstructs to state digest {result.actual[:16]} but "
                f"committed {result.expected[:16]}: a node may mutate its input state in place "
                "or a reducer may not be a pure function; the run's rows are intact. It is "
                f"failed and audited; fix the cause, then `wayline runs retry {loop.run_id}`"
            )
            # Terminal, not a retry: the same code reconstructs the same wrong state, and a
            # run left pending was claimed and verified again and again (920 times in 2 s).
            graph.store.note_error(
                loop.tenant_id, loop.run_id, token=loop.token, error=str(error), status="failed"
            )
            graph.store.append_audit(
                AuditRecord(
                    loop.tenant_id,
                    loop.run_id,
                    loop.owner,
                    "verify",
                    "diverged",
                    detail=f"step {result.step}: committed {result.expected[:16]}, "
                    f"reconstructed {result.actual[:16]}",
                )
            )
            raise error

    def state_digest(self, config: Mapping[str, Any]) -> str:
        """Digest of the reconstructed current state, comparable with the committed one."""
        graph = as_graph(self)
        tenant, run_id = _ids(config, create=False)
        run = graph.store.get_run(tenant, run_id)
        if run is None:
            raise WaylineError(f"no run {run_id!r} for tenant {tenant!r}")
        rec = reconstruct(graph.store, graph.codec, graph.new_channels(), tenant, run_id, run.step)
        return state_digest(graph.codec, rec.channels)


def _saved_at_interrupt(
    graph: CompiledGraph, tenant: str, run_id: str, step: int, asked: Sequence[InterruptRecord]
) -> dict[str, TaskResult]:
    """With durability "exit", what LangGraph saved with a past checkpoint: one invocation
    writes one checkpoint, at its end, with the writes of the tasks that had finished. So a
    step whose tasks asked questions (``asked``) keeps the results of the peers that
    finished beside them; the askers' own results came from a later invocation, which saved
    none for it, and neither did a step stopped before by a breakpoint (no task ran)."""
    if not asked:
        return {}
    askers = {r.task_id for r in asked}
    results = step_results(graph, tenant, run_id, step)
    return {task_id: r for task_id, r in results.items() if task_id not in askers}
