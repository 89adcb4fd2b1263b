"""State schemas (TypedDict, dataclass, pydantic) turned into channels.

A key annotated ``Annotated[T, reducer]`` becomes a reducer channel; any other key keeps
its last value. Dataclasses, pydantic models and enums found in the annotations are
registered with the codec, because the graph that declares them is the one that stores them.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from wayline.classes import DEFAULT_CLASS, Classified
from wayline.codec import Codec
from wayline.errors import GraphError, InvalidUpdateError
from wayline.graph.channels import (
    APPEND_REDUCERS,
    AppendLog,
    Channel,
    LastValue,
    MessageLog,
    ReducerChannel,
)
from wayline.graph.channels.base import CONCRETE
from wayline.graph.channels.delta import DeltaChannel
from wayline.graph.message import add_messages

__all__ = ["ROOT", "StateSchema", "is_typeddict", "register_hint_types", "streamed_update"]

SchemaKind = Literal["typeddict", "dataclass", "pydantic", "dict", "root"]
ROOT = "__root__"
"""The one channel of a state that is a single value (``StateGraph(Annotated[list, add])``,
``StateGraph(int)``), as LangGraph names it: nodes get the value and return the next."""


@dataclasses.dataclass(frozen=True)
class StateSchema:
    """What a graph's state is: its class, its kind and a channel template per key."""

    cls: type
    kind: SchemaKind
    channels: Mapping[str, Channel]
    classes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The data class of each labelled key (``Classified``); the others are "default"."""
    managed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Keys computed for each node, not stored (``wayline.managed``): key -> kind."""
    own: frozenset[str] = frozenset()
    """The state class's own keys; the channels may hold more (input, output and private
    schemas' keys), which a node reading the state class does not see (as LangGraph)."""

    @classmethod
    def from_class(cls, schema: type, codec: Codec) -> StateSchema:
        kind = _kind_of(schema)
        try:
            hints = (
                {ROOT: schema}
                if kind == "root"
                else typing.get_type_hints(schema, include_extras=True)
            )
        except Exception as exc:
            raise GraphError(
                f"cannot read the annotations of state schema {schema!r}: {exc}"
            ) from exc
        if kind == "typeddict" and set(hints) == {ROOT}:
            kind = "root"  # ``class State(TypedDict): __root__: ...``: a single-value state
        if kind == "pydantic":
            hints = {k: v for k, v in hints.items() if k in schema.model_fields}  # type: ignore[attr-defined]
        elif kind == "dataclass":
            names = {f.name for f in dataclasses.fields(schema)}
            hints = {k: v for k, v in hints.items() if k in names}
        channels: dict[str, Channel] = {}
        classes: dict[str, str] = {}
        managed: dict[str, str] = {}
        for key, hint in hints.items():
            kind_of_managed = _managed(hint)
            if kind_of_managed is not None:
                managed[key] = kind_of_managed
                continue
            channels[key] = _channel_for(key, hint)
            label = _class_of(key, hint)
            if label != DEFAULT_CLASS:
                classes[key] = label
            _register_types(hint, codec, set())
        if kind in ("dataclass", "pydantic") and not codec.is_registered(schema):
            codec.register(schema)
        return cls(schema, kind, channels, classes, managed, frozenset(channels) | set(managed))

    @property
    def fingerprint(self) -> str:
        """A short digest of the keys and how each folds: a different schema, a different
        fingerprint (the default state-schema version a run records)."""
        parts = []
        for key, channel in sorted(self.channels.items()):
            reducer = getattr(channel, "reducer", None)
            name = getattr(reducer, "__qualname__", "") if reducer is not None else ""
            label = self.classes.get(key)  # unlabelled keys keep their old fingerprint
            parts.append(f"{key}:{type(channel).__name__}:{name}" + (f":{label}" if label else ""))
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]

    def new_channels(self) -> dict[str, Channel]:
        return {k: c.fresh() for k, c in self.channels.items()}

    def to_node_input(self, values: dict[str, Any]) -> Any:
        """The state a node receives, as the type the user declared. ``values`` is the
        caller's own fresh dict (``values_of``): a dict schema hands it over as it is."""
        if len(self.channels) + len(self.managed) > len(self.own) and self.kind != "dict":
            values = {k: v for k, v in values.items() if k in self.own}
        if self.kind in ("typeddict", "dict"):
            return values
        if self.kind == "root":
            return values.get(ROOT)
        return self.cls(**values)

    def as_input(self, values: dict[str, Any], cls: type) -> Any:
        """The state as a node or router annotated with another schema ``cls`` reads it:
        only that schema's keys."""
        keys = _keys_of(cls)
        picked = {k: v for k, v in values.items() if k in keys}
        return picked if self.kind in ("typeddict", "dict") or is_typeddict(cls) else cls(**picked)

    def visible(self, values: dict[str, Any]) -> dict[str, Any]:
        """The state's own keys of ``values`` (and a ``__interrupt__``): what ``invoke``
        returns and ``values`` streams, without other schemas' private keys."""
        if len(self.channels) + len(self.managed) <= len(self.own):
            return values
        return {k: v for k, v in values.items() if k in self.own or k == "__interrupt__"}

    def present(self, values: dict[str, Any]) -> Any:
        """The state as a caller sees it: the dict, or a single-value state's value."""
        return values.get(ROOT) if self.kind == "root" else values

    def input_to_dict(self, value: Any) -> dict[str, Any]:
        """Normalize an input or node update (dict, dataclass, pydantic model) to a dict."""
        if value is None:
            return {}
        if self.kind == "root":
            return {ROOT: value}
        if isinstance(value, Mapping):
            return dict(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        fields = getattr(type(value), "model_fields", None)
        if isinstance(fields, dict):
            # the fields it set, and those that differ from their default: a nested model
            # changed in place is written (as LangGraph), a default left alone is not
            kept = value.model_fields_set
            out = {}
            for key, info in fields.items():
                field = getattr(value, key)
                if key in kept or field != _default_of(info):
                    out[key] = field
            return out
        raise InvalidUpdateError(
            f"expected a dict of state updates, got {type(value).__name__}: return a dict "
            "whose keys are state keys, a Command, or None"
        )

    def check_keys(self, update: Mapping[str, Any], who: str) -> None:
        unknown = [k for k in update if k not in self.channels]
        if unknown:
            raise InvalidUpdateError(
                f"{who} wrote to undeclared state key(s) {sorted(unknown)}; declared keys are "
                f"{sorted(self.channels)}. Add them to the state schema "
                f"{getattr(self.cls, '__name__', self.cls)}."
            )


def _keys_of(cls: type) -> frozenset[str]:
    if isinstance(getattr(cls, "model_fields", None), dict):
        return frozenset(cls.model_fields)  # type: ignore[attr-defined]
    return frozenset(typing.get_type_hints(cls))


def _kind_of(schema: type) -> SchemaKind:
    if schema is dict:
        return "dict"
    if dataclasses.is_dataclass(schema):
        return "dataclass"
    if isinstance(getattr(schema, "model_fields", None), dict):
        return "pydantic"
    if is_typeddict(schema):
        return "typeddict"
    if isinstance(schema, type) and typing.get_type_hints(schema):
        raise GraphError(
            f"state schema must be a TypedDict, a dataclass or a pydantic model, got {schema!r}"
        )
    return "root"  # a single value: list[str], Annotated[list, operator.add], int...


def is_typeddict(cls: Any) -> bool:
    """A TypedDict from ``typing`` or from ``typing_extensions`` (LangGraph's
    ``MessagesState`` is the latter, which ``typing.is_typeddict`` does not recognize on
    Python < 3.13)."""
    return (
        isinstance(cls, type)
        and issubclass(cls, dict)
        and hasattr(cls, "__total__")
        and hasattr(cls, "__required_keys__")
    )


_QUALIFIERS = ("Required", "NotRequired", "ReadOnly")


def _unqualified(hint: Any) -> Any:
    """``NotRequired[T]`` / ``Required[T]`` / ``ReadOnly[T]`` (from typing or
    typing_extensions) as ``T``, at any position around ``Annotated``."""
    while getattr(typing.get_origin(hint), "_name", None) in _QUALIFIERS or (
        getattr(hint, "__origin__", None) is not None
        and getattr(typing.get_origin(hint), "__name__", None) in _QUALIFIERS
    ):
        (hint,) = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Annotated:
        base, *meta = typing.get_args(hint)
        inner = _unqualified(base)
        if inner is not base:
            return typing.Annotated[(inner, *meta)]
    return hint


def _channel_for(key: str, hint: Any) -> Channel:
    hint = _unqualified(hint)
    if typing.get_origin(hint) is typing.Annotated:
        base, *meta = typing.get_args(hint)
        delta = next((m for m in reversed(meta) if isinstance(m, DeltaChannel)), None)
        if delta is not None:
            return delta.bind(key, _factory(base))
        reducer = next((m for m in reversed(meta) if _is_reducer(m)), None)
        last = meta[-1] if meta else None
        if reducer is None and (inspect.isfunction(last) or inspect.ismethod(last)):
            raise GraphError(  # as LangGraph: a function annotating a key is its reducer
                f"Invalid reducer signature for state key {key!r}: expected (a, b) -> c, got "
                f"{last.__name__}{inspect.signature(last)}; give it two parameters"
            )
        if reducer is not None:
            factory = _factory(base)
            if factory is list and any(reducer is r for r in APPEND_REDUCERS):
                return AppendLog(key, reducer)
            if factory is list and reducer is add_messages:
                return MessageLog(key, reducer)
            return ReducerChannel(key, reducer, factory)
    return LastValue(key)


def _managed(hint: Any) -> str | None:
    """The kind of a ``RemainingSteps`` / ``IsLastStep`` annotation, else None."""
    from wayline.managed import ManagedValue

    hint = _unqualified(hint)
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    found = [m for m in typing.get_args(hint)[1:] if isinstance(m, ManagedValue)]
    return found[0].kind if found else None


def _class_of(key: str, hint: Any) -> str:
    """The data class ``Classified`` metadata gives a key (one at most), else "default"."""
    if typing.get_origin(hint) is not typing.Annotated:
        return DEFAULT_CLASS
    labels = {m.name for m in typing.get_args(hint)[1:] if isinstance(m, Classified)}
    if len(labels) > 1:
        raise GraphError(f"state key {key!r} has more than one data class: {sorted(labels)}")
    return labels.pop() if labels else DEFAULT_CLASS


def _is_reducer(obj: Any) -> bool:
    if not callable(obj) or isinstance(obj, type):
        return False
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return True  # builtins such as operator.add have no signature on some versions
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _factory(base: Any) -> Callable[[], Any] | None:
    origin = typing.get_origin(base) or base
    origin = CONCRETE.get(origin, origin)
    if isinstance(origin, type) and not is_typeddict(origin):
        return origin
    return None


def _register_types(hint: Any, codec: Codec, seen: set[int]) -> None:
    if id(hint) in seen:
        return
    seen.add(id(hint))
    if isinstance(hint, type):
        is_model = isinstance(getattr(hint, "model_fields", None), dict)
        if dataclasses.is_dataclass(hint) or is_model or issubclass(hint, enum.Enum):
            if not codec.is_registered(hint):
                codec.register(hint)
            try:
                inner = typing.get_type_hints(hint)
            except Exception:
                inner = {}
            for sub in inner.values():
                _register_types(sub, codec, seen)
            return
    for arg in typing.get_args(hint):
        _register_types(arg, codec, seen)


def register_hint_types(hint: Any, codec: Codec) -> None:
    """Register with ``codec`` the dataclasses, pydantic models and enums ``hint`` names."""
    _register_types(hint, codec, set())


def streamed_update(schema: StateSchema, update: Any) -> Any:
    """A node's return as an ``updates`` chunk shows it: a pydantic model as the writes it
    makes (LangGraph streams the written fields), anything else as it was returned."""
    if isinstance(getattr(type(update), "model_fields", None), dict) and schema.kind != "root":
        return schema.input_to_dict(update)
    return update


def _default_of(info: Any) -> Any:
    """A pydantic field's default value (made by its factory), or a marker equal to none."""
    factory = getattr(info, "default_factory", None)
    if factory is not None:
        try:
            return factory()
        except TypeError:  # a factory that takes the validated data
            return _NO_DEFAULT
    return getattr(info, "default", _NO_DEFAULT)


_NO_DEFAULT = object()
