"""State values as JSON: what a graph holds (dataclasses, pydantic models, enums, tuples)
in the plain shapes a LangGraph client expects."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
from collections.abc import Mapping
from typing import Any

from wayline.graph.types import Interrupt

__all__ = ["interrupt_json", "iso", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Interrupt):
        return interrupt_json(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_jsonable(dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return repr(value)


def interrupt_json(i: Interrupt, *, stream: bool = False) -> dict[str, Any]:
    """LangGraph's interrupt shape; an approval adds who may decide, until when, and the
    digest a decision names (``/wayline/runs/{id}/approvals/decide``)."""
    out: dict[str, Any] = {"value": to_jsonable(i.value), "id": i.id}
    if stream:
        out["response_schema"] = None
    if i.approvers is not None or i.expires_at is not None:
        out["approvers"] = list(i.approvers or ())
        out["expires_at"] = i.expires_at
        out["digest"] = i.digest
    return out


def iso(ts: float | None) -> str | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).isoformat()
