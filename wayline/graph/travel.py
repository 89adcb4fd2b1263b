"""Time travel: read any committed step, and fork a run at one into a new run.

A run's history is linear (one delta per step), so going back and running again is a
fork: the new run gets the original's steps up to the fork point (deltas, the nearest
snapshot and its segments, references to the blobs they use), and an origin record in its
audit log naming the run and step it came from and the **effect mode** it runs under:

- ``original`` (the default): an effect the original performed returns its recorded
  outcome; one it did not perform is refused (``EffectReplayRefused``), nothing is sent.
- ``sandbox``: every effect goes to a substitute the caller registers; ``ctx.record``
  values are reused where the original has them.
- ``live``: effects really happen again, under new keys (a business key gets the fork's id
  as a suffix). Only when asked for by name.

Because the steps keep their numbers, a fork's task at step n derives the same ids from the
original run as the original's task did: that is how ``original`` finds the outcome an
effect had (``wayline.effects.replay``). LangGraph's ``checkpoint_id`` names a step here; it
is derived from (tenant, run, step), so an id from another run is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ormsgpack

from wayline.errors import RedactedRunError, RunNotFoundError, TimeTravelError
from wayline.forks import (  # re-exported: where forks were named before the leaf module
    EFFECT_MODES,
    FORK_ACTION,
    FORK_INCARNATION,
    EffectsMode,
    ForkOrigin,
    is_fork,
)
from wayline.graph.checkpoint import _REF_PREFIX
from wayline.graph.segments import LogIndex
from wayline.ids import derive_id
from wayline.store.base import Store
from wayline.store.records import (
    BlobRecord,
    CommitBatch,
    DeltaRecord,
    RunUpdate,
    SegmentRecord,
    SnapshotRecord,
)

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = [
    "EFFECT_MODES",
    "FORK_ACTION",
    "FORK_INCARNATION",
    "EffectsMode",
    "ForkOrigin",
    "checkpoint_id",
    "create_fork",
    "input_checkpoint_id",
    "is_fork",
    "load_origin",
    "names_input_checkpoint",
    "requested_step",
]


def load_origin(store: Store, tenant_id: str, run_id: str) -> ForkOrigin | None:
    """The fork origin of a run, or None for a run that is not a fork."""
    for entry in store.load_audit(tenant_id, run_id):
        if entry.action == FORK_ACTION:
            return ForkOrigin.from_audit(entry)
    return None


def checkpoint_id(tenant_id: str, run_id: str, step: int) -> str:
    """A LangGraph-style checkpoint id for a step: UUID-shaped, the step in its first eight
    hex digits (so ids sort by step), the rest derived from the tenant and run."""
    tail = derive_id(tenant_id, run_id, "checkpoint", step)
    h = f"{step:08x}{tail[:24]}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def input_checkpoint_id(tenant_id: str, run_id: str, step: int) -> str:
    """The id of LangGraph's input checkpoint before input step ``step`` (the state before
    the input, ``wayline.graph.input_checkpoint``): the step in its first eight hex digits
    as ``checkpoint_id``'s, then ``0000`` (so it sorts before the step's own id), the rest
    derived from the tenant and run."""
    tail = derive_id(tenant_id, run_id, "input-checkpoint", step)
    h = f"{step:08x}0000{tail[:20]}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def names_input_checkpoint(config: Mapping[str, Any], tenant_id: str, run_id: str) -> bool:
    """Whether ``config``'s ``checkpoint_id`` is an input checkpoint's (``requested_step``
    gives the input step it comes before)."""
    cid = (config.get("configurable", {}) or {}).get("checkpoint_id")
    step = requested_step(config, tenant_id, run_id) if cid else None
    return step is not None and cid == input_checkpoint_id(tenant_id, run_id, step)


def requested_step(config: Mapping[str, Any], tenant_id: str, run_id: str) -> int | None:
    """The step a config names (``checkpoint_id`` or wayline's ``step``), or None. An input
    checkpoint's id names the input step it comes before."""
    conf = config.get("configurable", {}) or {}
    cid = conf.get("checkpoint_id")
    if cid:
        try:
            step = int(str(cid)[:8], 16)
        except ValueError:
            step = -1
        ids = (checkpoint_id(tenant_id, run_id, step), input_checkpoint_id(tenant_id, run_id, step))
        if step < 0 or cid not in ids:
            raise TimeTravelError(
                f"checkpoint_id {cid!r} is not a checkpoint of run {run_id!r} (tenant "
                f"{tenant_id!r}); take ids from get_state or get_state_history of this run"
            )
        return step
    named = conf.get("step")
    return None if named is None else int(named)


def check_mode(effects: str) -> EffectsMode:
    if effects not in EFFECT_MODES:
        raise TimeTravelError(
            f"effects={effects!r}: a replay or fork runs under 'original' (recorded outcomes, "
            "new effects refused), 'sandbox' (your substitutes) or 'live' (new keys, effects "
            "happen again)"
        )
    return effects  # type: ignore[return-value]


def create_fork(
    store: Store,
    tenant_id: str,
    run_id: str,
    step: int,
    *,
    new_run_id: str,
    effects: str = "original",
    owner: str,
    durability: str | None = None,
    actor: str = "client",
    lease_seconds: float = 300.0,
) -> int:
    """Create ``new_run_id`` as a fork of ``run_id`` after ``step``, holding its lease as
    ``owner``; returns the fencing token (release it, or run the fork under it)."""
    mode = check_mode(effects)
    src = store.get_run(tenant_id, run_id)
    if src is None:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r} to fork")
    if src.redacted:
        raise RedactedRunError(
            f"run {run_id!r} had its {', '.join(sorted(src.redacted))} data erased: a fork "
            "would run on Redacted tombstones; nothing was created"
        )
    if not 0 <= step <= src.step:
        raise TimeTravelError(
            f"run {run_id!r} has committed steps 0..{src.step}; cannot fork it at step {step}"
        )
    existing = store.get_run(tenant_id, new_run_id)
    if existing is not None:
        raise TimeTravelError(
            f"run {new_run_id!r} exists already; a fork needs a new run id (or none: one is "
            "made up)"
        )
    parent = load_origin(store, tenant_id, run_id)
    effects_of = parent.effects_of if parent and parent.effects != "live" else run_id
    if effects_of == run_id:
        incarnation = src.incarnation
    else:
        incarnation = parent.incarnation if parent is not None else ""
    origin = ForkOrigin(
        run_id,
        step,
        mode,
        effects_of=effects_of,
        key_suffix=f"~{new_run_id}" if mode == "live" else parent.key_suffix if parent else "",
        incarnation=incarnation,
    )
    store.create_run(
        tenant_id,
        new_run_id,
        graph_name=src.graph_name,
        graph_version=src.graph_version,
        durability=durability or src.durability,
        schema_version=src.schema_version,
        subject=src.subject,  # a fork holds the same subject's data: erased with it
        classes=src.classes,
        incarnation=FORK_INCARNATION + uuid.uuid4().hex,
        fingerprint=src.fingerprint,  # a fork continues on the graph that wrote its history
        shape=src.shape,
    )
    token = store.claim(tenant_id, new_run_id, owner=owner, lease_seconds=lease_seconds)
    batch = _history(store, tenant_id, run_id, step)
    batch.audit.append(origin.to_audit(tenant_id, new_run_id, actor))
    nodes, status = _next_nodes(store, tenant_id, src, step)
    digest = src.state_digest if status == "done" else None
    batch.run = RunUpdate(status, step, nodes, state_digest=digest)
    store.commit(tenant_id, new_run_id, token, batch)
    return token


def _history(store: Store, tenant_id: str, run_id: str, step: int) -> CommitBatch:
    """The rows of ``run_id`` through ``step`` as a batch for the fork: every delta (so any
    step of the fork can be read), the nearest snapshot and its segments (so reading the
    fork's latest step stays bounded), and the blobs they reference."""
    deltas = store.load_deltas(tenant_id, run_id, -1, step)
    batch = CommitBatch(deltas=[DeltaRecord(d.step, d.payload, d.channels) for d in deltas])
    refs: set[str] = set()
    for d in deltas:
        for _, _, writes in ormsgpack.unpackb(d.payload):
            refs.update(_ref(value) for _, value in writes)
    snapshot = store.load_snapshot(tenant_id, run_id, step)
    if snapshot is not None:
        batch.snapshots.append(SnapshotRecord(snapshot.step, snapshot.payload, snapshot.channels))
        wire = ormsgpack.unpackb(snapshot.payload)
        refs.update(_ref(value) for value in wire["channels"].values())
        refs.add(_ref(wire["next"]))
        for key, index in wire["logs"].items():
            segments = LogIndex.from_wire(index).segments
            payloads = store.load_segments(tenant_id, run_id, [s.seg_id for s in segments])
            batch.segments.extend(
                SegmentRecord(s.seg_id, key, s.level, s.after_step, s.last_step, p, step)
                for s, p in zip(segments, payloads, strict=True)
            )
    refs.discard("")
    batch.blobs.extend(
        BlobRecord(digest, store.load_blob(tenant_id, digest), "", step) for digest in sorted(refs)
    )
    return batch


def _ref(value: bytes) -> str:
    if len(value) == 35 and value.startswith(_REF_PREFIX):
        return value[3:].hex()
    return ""


def _next_nodes(store: Store, tenant_id: str, src: Any, step: int) -> tuple[tuple[str, ...], Any]:
    """What the fork runs next: at the source's last step, what the source would; earlier,
    the nodes that ran in the source's next step (the delta names them)."""
    if step == src.step:
        nodes = tuple(src.next_nodes)
    else:
        (after,) = store.load_deltas(tenant_id, src.run_id, step, step + 1)
        nodes = tuple(name for name, _, _ in ormsgpack.unpackb(after.payload))
    return nodes, ("running" if nodes else "done")


def fork_id_for(store: Store, tenant_id: str, run_id: str, step: int) -> str:
    """The id of a replay from a past checkpoint: ``RUN@STEP``, then ``RUN@STEP.2``, ..."""
    candidate, n = f"{run_id}@{step}", 1
    while store.get_run(tenant_id, candidate) is not None:
        n += 1
        candidate = f"{run_id}@{step}.{n}"
    return candidate


def open_replay(
    graph: CompiledGraph, config: Mapping[str, Any], tenant_id: str, run_id: str, owner: str
) -> tuple[str, int] | None:
    """When ``config`` asks to run from a past checkpoint (``checkpoint_id`` or ``step``
    before the run's last), or names a ``fork_id``: fork there and return (fork id, fencing
    token held by ``owner``); the caller runs the fork. None: an ordinary run."""
    conf = config.get("configurable", {}) or {}
    step = requested_step(config, tenant_id, run_id)
    fork_id = conf.get("fork_id")
    if step is None and fork_id is None:
        return None
    run = graph.store.get_run(tenant_id, run_id)
    if run is None:
        if step is not None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r} to go back in")
        return None
    if step is None:
        step = run.step
    if fork_id is None and step >= run.step:
        return None  # the latest checkpoint: just continue the run
    fork_id = fork_id or fork_id_for(graph.store, tenant_id, run_id, step)
    token = create_fork(
        graph.store,
        tenant_id,
        run_id,
        step,
        new_run_id=str(fork_id),
        effects=str(conf.get("effects", "original")),
        owner=owner,
        actor=str(conf.get("actor", "client")),
    )
    return str(fork_id), token
