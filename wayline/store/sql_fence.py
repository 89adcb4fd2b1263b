"""The fenced update of a run row, as parameters: what a commit sends first to prove its
lease (the run's fencing token, and for a step that keeps the status, the status) and the
row a commit that creates its run leaves. Shared by the one-run commit
(``wayline.store.sql_steps``), the group commit (``wayline.store.sql_group``) and
PostgreSQL's one-statement paths (``wayline.store.postgres``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from wayline.store.records import SETTLED_STATUSES, CommitBatch

__all__ = [
    "classes_json",
    "created_params",
    "fence_params",
    "first_fence",
    "nodes_json",
    "run_values",
]


def first_fence(
    q: SimpleNamespace, key: tuple[str, str], token: int, batch: CommitBatch, now: float
) -> tuple[str, tuple[Any, ...]]:
    """The fenced update to try first: a step of a held run keeps its status (``running``),
    so the cheaper query that does not assign it; a status change has no cheaper one (and a
    row the batch creates is ``pending``: its first step changes the status)."""
    moves = batch.create is not None or (batch.run is not None and batch.run.status != "running")
    return fence_params(q, key, token, batch, now, "" if moves else None)


def fence_params(
    q: SimpleNamespace,
    key: tuple[str, str],
    token: int,
    batch: CommitBatch,
    now: float,
    status: str | None,
) -> tuple[str, tuple[Any, ...]]:
    """The fenced update of a run row a batch makes, and its parameters. ``status`` is the
    row's current status when known ("" when known to differ, None when unknown: try the
    cheaper query that keeps it first)."""
    run = batch.run
    if run is None:
        return q.Q_FENCE_TOUCH, (now, 1 if batch.take_inbox else 0, *key, token)
    new_status, *step = run_values(batch, now)
    if status is None or status == new_status:
        return q.Q_FENCE_STEP, (*step, *key, token, new_status)
    return q.Q_FENCE_UPDATE, (new_status, *step, new_status, new_status, *key, token)


def run_values(batch: CommitBatch, now: float) -> tuple[Any, ...]:
    """What a batch that moves its run sets on the run row, in ``Q_FENCE_UPDATE``'s order:
    status, step, next nodes (JSON), error, state digest (None keeps the row's), the time,
    and 1 if it takes the run's inbox (else 0)."""
    run = batch.run
    assert run is not None
    nodes = nodes_json(tuple(run.next_nodes))  # a tuple as declared: tuple() returns it
    take = 1 if batch.take_inbox else 0
    return (run.status, run.step, nodes, run.error, run.state_digest, now, take)


def created_params(key: tuple[str, str], batch: CommitBatch, now: float) -> tuple[Any, ...]:
    """The row of a run that ``batch`` creates as its first step leaves it (the row
    ``_create`` inserts, after the step's fenced update), for a backend that writes both in
    one statement: tenant, run, graph, version, status, step, next nodes, durability, lease
    owner and expiry (none once settled), error, digest, times, schema version,
    incarnation, queued time, subject, classes, fingerprint, shape."""
    new, run = batch.create, batch.run
    assert new is not None and run is not None
    held = run.status not in SETTLED_STATUSES
    owner, expires = (new.owner, now + new.lease_seconds) if held else (None, None)
    nodes = nodes_json(tuple(run.next_nodes))
    return (
        *key,
        new.graph_name,
        new.graph_version,
        run.status,
        run.step,
        nodes,
        new.durability,
        owner,
        expires,
        run.error,
        run.state_digest,
        now,
        now,
        new.schema_version,
        new.incarnation,
        now,
        new.subject,
        classes_json(new.classes),
        new.fingerprint,
        new.shape,
    )


@functools.lru_cache(maxsize=1024)
def nodes_json(nodes: tuple[str, ...]) -> str:
    """A run row's ``next_nodes`` column: a graph has a few such lists, every step writes one."""
    return json.dumps(list(nodes))


def classes_json(classes: Mapping[str, str] | None) -> str:
    """A run row's ``classes`` column: its data classes, sorted, compact."""
    return json.dumps(dict(sorted((classes or {}).items())), separators=(",", ":"))
