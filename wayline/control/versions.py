"""Carrying a run from one graph version to the next, explicitly.

A run continues on the version that wrote it; workers serve several versions side by side.
When a run must move on (the old code is retired), ``migrate_run`` reconstructs its state
with the old graph, passes it through the migration the new graph registered
(``StateGraph.migrate(from_version, to_version, fn)``), checks the result against the new
graph, and writes it as a snapshot at the run's current step together with the new
versions, in one fenced commit. Pending interrupts stay answerable: the step, and so every
task and interrupt id, is unchanged.
"""

from __future__ import annotations

from wayline.errors import RunNotFoundError, VersionMismatchError
from wayline.graph.algo import values_of
from wayline.graph.channels import Barrier
from wayline.graph.checkpoint import reconstruct, write_snapshot
from wayline.graph.compiled import CompiledGraph
from wayline.graph.identity import check_identity
from wayline.store.base import Store
from wayline.store.records import AuditRecord, CommitBatch, RunRecord
from wayline.store.subject_keys import SubjectSeal

__all__ = ["migrate_run"]


def migrate_run(
    store: Store,
    tenant_id: str,
    run_id: str,
    old: CompiledGraph,
    new: CompiledGraph,
    *,
    owner: str = "wayline-migrate",
    lease_seconds: float = 60.0,
) -> RunRecord:
    """Move a run written by ``old`` onto ``new``; returns the run row afterwards."""
    run = store.get_run(tenant_id, run_id)
    if run is None:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
    if (run.graph_name, run.graph_version) != (old.name, old.version):
        raise VersionMismatchError(
            f"run {run_id!r} was written by {run.graph_name}@{run.graph_version}, "
            f"not by {old.name}@{old.version}"
        )
    check_identity(run, old)  # the old graph must be the one that wrote the run
    migration = new.migrations.get(old.version)
    if migration is None:
        raise VersionMismatchError(
            f"{new.name}@{new.version} registers no migration from version {old.version!r}: "
            f"add StateGraph.migrate({old.version!r}, {new.version!r}, fn)"
        )
    if run.step < 0:
        raise VersionMismatchError(f"run {run_id!r} has no committed state to migrate")
    if store.load_pending(tenant_id, run_id, run.step + 1):
        raise VersionMismatchError(
            f"run {run_id!r} is in the middle of a step (some of its nodes finished): let it "
            "finish that step on its own version first"
        )
    token = store.claim(tenant_id, run_id, owner=owner, lease_seconds=lease_seconds)
    try:
        rec = reconstruct(store, old.codec, old.new_channels(), tenant_id, run_id, run.step)
        values = migration(dict(values_of(rec.channels)))
        new.schema.check_keys(values, f"the migration {old.version} -> {new.version}")
        missing = sorted({t.name for t in rec.next_tasks} - set(new.nodes))
        if missing:
            raise VersionMismatchError(
                f"after the migration the run would enter node(s) {missing}, which "
                f"{new.name}@{new.version} does not have; nothing was changed"
            )
        channels = new.new_channels()
        for key, value in values.items():
            channels[key].restore(value)
        for key, channel in rec.channels.items():
            if isinstance(channel, Barrier) and key in channels:
                channels[key].restore(channel.value)
        batch = CommitBatch(
            versions=(new.version, new.schema_version, new.fingerprint, new.shape_json),
            audit=[
                AuditRecord(
                    tenant_id,
                    run_id,
                    owner,
                    "migrate",
                    "done",
                    detail=f"{old.name}@{old.version} -> {new.name}@{new.version}",
                )
            ],
        )
        seal = SubjectSeal(store, tenant_id, run.subject, run.classes) if run.subject else None
        write_snapshot(
            batch,
            new.codec,
            channels,
            rec.next_tasks,
            {},
            step=run.step,
            threshold=new.blob_threshold,
            fresh=new.version,  # new segments: the old ones belong to the old version
            seal=seal,
        )
        store.commit(tenant_id, run_id, token, batch)
    finally:
        store.release(tenant_id, run_id, token)
    moved = store.get_run(tenant_id, run_id)
    assert moved is not None
    return moved
