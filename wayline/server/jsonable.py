"""State values as JSON: what a graph holds (dataclasses, pydantic models, enums, tuples)
in the plain shapes a LangGraph client expects."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import json
from collections.abc import Mapping
from typing import Any

from wayline.graph.types import Interrupt

__all__ = ["dumps_jsonable", "interrupt_json", "iso", "to_jsonable"]


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


def dumps_jsonable(value: Any) -> str:
    """``json.dumps(to_jsonable(value))``, compact, without first copying what JSON holds
    as it is: only values JSON has no form for go through ``to_jsonable`` (the encoder's
    ``default``). A stream encodes every state it sends; under yappi the copy cost about
    twice the encoding itself. Keys JSON writes in its own way (``True`` as
    ``"true"``, an enum as its value), as LangGraph's server writes them; a key it refuses
    (a tuple) sends the whole value the long way."""
    try:
        return json.dumps(value, separators=(",", ":"), default=_jsonable_leaf)
    except (TypeError, ValueError):
        return json.dumps(to_jsonable(value), separators=(",", ":"))


def _jsonable_leaf(value: Any) -> Any:
    if isinstance(value, Mapping):  # a mapping that is not a dict
        return dict(value)
    if isinstance(value, set | frozenset):
        return list(value)
    return to_jsonable(value)


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
