"""Integrity of a stored run, finished or not: ``wayline runs verify``.

Without the graph it checks what the store alone can: every payload row against its
checksum (and that it opens, when sealed), every committed step's delta present, every blob
and segment a row refers to present, every envelope decodable. With the graph it also folds
the run's state from its rows, and for a finished run compares it with the digest its last
commit recorded. It reads only, and lists every problem it finds, not only the first.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import ormsgpack

from wayline.errors import RunNotFoundError, WaylineError
from wayline.graph.segments import LogIndex
from wayline.ids import RunRef
from wayline.store.base import Store

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["IntegrityReport", "check_run"]


@dataclasses.dataclass(frozen=True, slots=True)
class IntegrityReport:
    run_id: str
    status: str
    step: int
    rows: int
    """Rows checked."""
    problems: tuple[str, ...]
    folded: bool
    """The state was reconstructed from the rows (a graph was given)."""
    digest_ok: bool | None
    """A finished run's reconstruction equals its committed digest (None: not compared)."""

    @property
    def ok(self) -> bool:
        return not self.problems and self.digest_ok is not False


def check_run(
    store: Store, tenant_id: str, run_id: str, graph: CompiledGraph | None = None
) -> IntegrityReport:
    problems: list[str] = []
    try:
        run = store.get_run(tenant_id, run_id)
    except WaylineError as exc:  # the run row itself (its queued input) is damaged
        run, problems = None, [str(exc)]
    rows, found = store.check_rows(tenant_id, run_id)
    if run is None and not rows:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
    problems.extend(str(p) for p in found)
    if run is not None:
        problems.extend(
            p for p in _envelopes(store, tenant_id, run_id, run.step) if p not in problems
        )
    folded, digest_ok = False, None
    if graph is not None and run is not None and not problems:
        cfg = RunRef(tenant_id, run_id).config()
        try:
            # A redacted run cannot match the digest of the values it no longer holds: it
            # must still fold (every row readable), and digest_ok stays None.
            if run.state_digest is not None and not run.redacted:
                result = graph.verify(cfg)
                digest_ok = result.ok
                if not result.ok:
                    problems.append(
                        f"the state reconstructs to digest {result.actual[:16]}, the run "
                        f"committed {result.expected[:16]}"
                    )
            else:
                graph.state_digest(cfg)
            folded = True
        except WaylineError as exc:
            problems.append(str(exc))
    status = run.status if run is not None else "unreadable"
    step = run.step if run is not None else -1
    return IntegrityReport(run_id, status, step, rows, tuple(problems), folded, digest_ok)


def _envelopes(store: Store, tenant_id: str, run_id: str, last: int) -> list[str]:
    """Deltas and snapshots decode as envelopes and the segments the snapshots index
    exist. Row by row, so one damaged row hides nothing else."""
    problems: list[str] = []
    for step in range(last + 1):
        try:
            for delta in store.load_deltas(tenant_id, run_id, step - 1, step):
                for _name, _path, _writes in ormsgpack.unpackb(delta.payload):
                    pass
        except WaylineError as exc:
            problems.append(str(exc))
        except (ValueError, TypeError) as exc:
            problems.append(f"deltas row of run {run_id!r} at step {step} is corrupt: {exc}")
    steps = sorted({m.step for m in store.load_meter(tenant_id, run_id) if m.table == "snapshots"})
    for step in steps:
        try:
            snapshot = store.load_snapshot(tenant_id, run_id, step)
            if snapshot is None or snapshot.step != step:
                continue  # deleted: reads fall back to an earlier one, losing nothing
            logs = ormsgpack.unpackb(snapshot.payload)["logs"]
            wanted = [s.seg_id for w in logs.values() for s in LogIndex.from_wire(w).segments]
        except WaylineError as exc:
            problems.append(str(exc))
            continue
        except (ValueError, TypeError, KeyError) as exc:
            problems.append(f"snapshots row of run {run_id!r} at step {step} is corrupt: {exc}")
            continue
        for seg_id in wanted:
            try:
                store.load_segments(tenant_id, run_id, [seg_id])
            except WaylineError as exc:
                problems.append(str(exc))
    return problems
