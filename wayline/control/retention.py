"""Retention: everything held for a run, exported (subject access) or purged (erasure).

A run's rows live in every table keyed by (tenant, run); blobs are shared within a tenant
by content digest, so a purge deletes only the blobs no other run still references. Both
operations are scoped by tenant like every other store call.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import re
import time
import uuid
from collections.abc import Sequence
from typing import Any

import ormsgpack

from wayline.codec import Codec
from wayline.errors import RunNotFoundError, WaylineError
from wayline.graph.checkpoint import BlobCache, decode_inbox, decode_results, decode_value
from wayline.store.base import Store
from wayline.store.records import TERMINAL_STATUSES, AuditRecord

__all__ = ["TERMINAL_STATUSES", "export_run", "export_subject", "parse_age", "purge_older_than"]

_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def export_run(store: Store, codec: Codec, tenant_id: str, run_id: str) -> dict[str, Any]:
    """Everything the store holds for a run, decoded, as JSON-ready data."""
    rows = store.dump_run(tenant_id, run_id)
    if not rows["runs"]:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
    resolve = BlobCache(store, tenant_id)

    def results(data: bytes) -> list[dict[str, Any]]:
        return [
            {"node": r.name, "path": list(r.path), "writes": [[k, v] for k, v in r.writes]}
            for r in decode_results(codec, data, resolve)
        ]

    def snapshot(data: bytes) -> dict[str, Any]:
        raw = ormsgpack.unpackb(data)
        channels = {k: decode_value(codec, v, resolve) for k, v in raw["channels"].items()}
        return {"channels": channels, "logs": raw["logs"], "next": codec.loads(raw["next"])}

    decoders: dict[str, dict[str, Any]] = {
        "runs": {"inbox": lambda b: decode_inbox(codec, b)},
        "deltas": {"payload": results},
        "pending_writes": {"payload": results},
        "snapshots": {"payload": snapshot},
        "segments": {"payload": codec.loads},
        "interrupts": {"value": codec.loads, "resume": codec.loads},
        "effects": {"result": codec.loads},
        "blobs": {"payload": codec.loads},
        "lg_checkpoints": {"payload": lg_payload},
        "lg_values": {"payload": lg_payload},
        "lg_writes": {"payload": lg_payload},
    }
    out: dict[str, Any] = {"tenant_id": tenant_id, "run_id": run_id, "exported_at": time.time()}
    for table, table_rows in rows.items():
        fields = decoders.get(table, {})
        out[table] = [
            {k: fields[k](bytes(v)) if k in fields and v is not None else v for k, v in r.items()}
            for r in table_rows
        ]
    return {key: jsonable(value) for key, value in out.items()}  # the keys are str already


def export_subject(store: Store, codec: Codec, tenant_id: str, subject: str) -> dict[str, Any]:
    """Everything held about a data subject (an access request): each of its runs exported
    whole, decoded, JSON-ready; erased values appear as their ``Redacted`` tombstones."""
    ids = store.runs_of_subject(tenant_id, subject)
    runs = [export_run(store, codec, tenant_id, r) for r in ids]
    return {"tenant_id": tenant_id, "subject": subject, "runs": runs, "exported_at": time.time()}


def lg_payload(data: bytes) -> Any:
    """A LangGraph payload (``type NUL data`` of LangGraph's serializer) as plain data,
    without LangGraph and without constructing any stored type: msgpack extension values
    (LangGraph's encoding of objects) are shown as their code and raw bytes."""
    type_, _, raw = data.partition(b"\x00")
    kind = type_.decode(errors="replace")
    if kind == "msgpack":
        return ormsgpack.unpackb(raw, ext_hook=lambda code, b: {"ext": code, "data": bytes(b)})
    if kind == "json":
        return json.loads(raw)
    if kind in ("null", "empty", "writes"):
        return {"type": kind}
    return {"type": kind, "data": raw}


def purge_older_than(
    store: Store,
    tenant_id: str,
    age_seconds: float,
    *,
    statuses: Sequence[str] = TERMINAL_STATUSES,
    dry_run: bool = False,
) -> list[str]:
    """Purge the tenant's runs in ``statuses`` not updated for ``age_seconds``; each purge
    is atomic. Returns the purged run ids (``dry_run``: the ids it would purge, and
    purges nothing)."""
    if age_seconds < 0:
        raise WaylineError("a retention age cannot be negative")
    purged = []
    for run_id in store.runs_before(tenant_id, time.time() - age_seconds, statuses):
        if not dry_run:
            rows = store.purge_run(tenant_id, run_id)
            store.append_audit(  # the receipt outlives the run: who, when, what, no payload
                AuditRecord(
                    tenant_id,
                    run_id,
                    "retention",
                    "purge",
                    "erased",
                    detail=json.dumps({"rows": rows, "older_than_s": age_seconds}),
                    at=time.time(),
                )
            )
        purged.append(run_id)
    return purged


def parse_age(text: str) -> float:
    """``90s``, ``15m``, ``12h``, ``30d``, ``2w`` in seconds."""
    match = _AGE.match(text.strip())
    if not match:
        raise WaylineError(f"age {text!r} must look like 30d, 12h, 15m, 90s or 2w")
    return float(match.group(1)) * _SECONDS[match.group(2)]


def jsonable(value: Any) -> Any:
    """Plain JSON data for any value the codec can hold."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [jsonable(v) for v in items]
    if isinstance(value, bytes | bytearray | memoryview):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump())
    return repr(value)
