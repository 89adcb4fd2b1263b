"""Encoding steps for the store and reconstructing state from it.

Reconstruction is the nearest snapshot plus a re-fold of the later deltas through
``apply_step``, the function execution used, with the batches execution used.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from wayline.codec import Codec
from wayline.errors import CodecError
from wayline.graph.algo import TaskResult, TaskSpec, apply_step
from wayline.graph.channels import MISSING, Barrier, Channel
from wayline.store.base import Store

__all__ = ["Reconstructed", "encode_delta", "encode_snapshot", "reconstruct", "state_digest"]


def encode_delta(codec: Codec, results: Sequence[TaskResult]) -> bytes:
    try:
        return codec.dumps([r.to_wire() for r in results])
    except CodecError:
        raise _locate(codec, results) from None


def decode_delta(codec: Codec, payload: bytes) -> list[TaskResult]:
    return [TaskResult.from_wire(item) for item in codec.loads(payload)]


def encode_snapshot(
    codec: Codec, channels: Mapping[str, Channel], next_tasks: Sequence[TaskSpec]
) -> bytes:
    values = {k: c.checkpoint() for k, c in channels.items() if c.value is not MISSING}
    return codec.dumps({"channels": values, "next": [t.to_wire() for t in next_tasks]})


def state_digest(codec: Codec, channels: Mapping[str, Channel]) -> str:
    """A digest of the channel values, stable across processes (sorted keys)."""
    h = hashlib.sha256()
    for key in sorted(channels):
        channel = channels[key]
        if channel.value is MISSING:
            continue
        h.update(key.encode())
        h.update(b"\x00")
        h.update(codec.dumps(channel.checkpoint()))
    return h.hexdigest()


@dataclasses.dataclass(slots=True)
class Reconstructed:
    channels: dict[str, Channel]
    next_tasks: list[TaskSpec]
    step: int
    snapshot_step: int | None
    folds: int
    """Deltas re-folded after the snapshot: bounded by ``snapshot_every``."""


def reconstruct(
    store: Store,
    codec: Codec,
    channels: dict[str, Channel],
    tenant_id: str,
    run_id: str,
    through: int,
) -> Reconstructed:
    """State after step ``through``, folded onto ``channels`` (fresh, from the schema)."""
    snapshot = store.load_snapshot(tenant_id, run_id, through)
    next_tasks: list[TaskSpec] = []
    base = -1
    if snapshot is not None:
        data = codec.loads(snapshot.payload)
        for key, value in data["channels"].items():
            channels[key].restore(value)
        next_tasks = [TaskSpec.from_wire(t) for t in data["next"]]
        base = snapshot.step
    folds = 0
    for delta in store.load_deltas(tenant_id, run_id, base, through):
        next_tasks = apply_step(channels, decode_delta(codec, delta.payload))
        base = delta.step
        folds += 1
    return Reconstructed(
        channels, next_tasks, base, None if snapshot is None else snapshot.step, folds
    )


def _locate(codec: Codec, results: Sequence[TaskResult]) -> CodecError:
    """Name the node, channel and type that the codec refused."""
    for result in results:
        for key, value in result.writes:
            try:
                codec.dumps(value)
            except CodecError as exc:
                return CodecError(
                    f"node {result.name!r} wrote a value to channel {key!r} that cannot be "
                    f"stored: {exc}"
                )
    return CodecError("a step's writes cannot be encoded")


def barrier_keys(channels: Mapping[str, Any]) -> list[str]:
    return [k for k, c in channels.items() if isinstance(c, Barrier)]
