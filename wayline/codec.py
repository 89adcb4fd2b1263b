"""The binary codec: msgpack (via ormsgpack) with typed extensions and an explicit registry.

Reading a checkpoint must never execute code, so there is no pickle here. Standard types
(tuple, set, datetime, UUID, Decimal, ...) have fixed extension codes; user types
(dataclasses, pydantic models, enums) decode only when registered by name, and decoding
builds them field by field without calling ``__init__`` or validators: a restore is the
value that was stored, not a re-validation of it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import threading
import uuid
import zoneinfo
from collections.abc import Callable
from typing import Any

import ormsgpack

from wayline.classes import Redacted
from wayline.errors import CodecError
from wayline.interop import lc_types

__all__ = ["OMIT_DEFAULT", "Codec", "default_codec", "register_type"]

OMIT_DEFAULT = "wayline.omit_default"
"""Dataclass field metadata: store the field only when it differs from its default, so a
field added later leaves the bytes of values that do not use it as they were."""

_PACK_OPTS = (
    ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_UUID
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT
)

# Extension codes are part of the on-disk format: never renumber, only add.
EXT_TUPLE = 1
EXT_SET = 2
EXT_FROZENSET = 3
EXT_DATETIME = 4
EXT_DATE = 5
EXT_TIME = 6
EXT_TIMEDELTA = 7
EXT_UUID = 8
EXT_DECIMAL = 9
EXT_BIGINT = 10
EXT_ENUM = 11
EXT_DATACLASS = 12
EXT_PYDANTIC = 13
EXT_KEYED_DICT = 14
EXT_REF = 15
EXT_ZONED_DATETIME = 16
EXT_BYTEARRAY = 17


class Codec:
    """Encodes values to bytes and back; user types must be registered to decode."""

    def __init__(self) -> None:
        self._by_name: dict[str, type] = {}
        self._names: dict[type, str] = {}
        self._lock = threading.Lock()
        self._failure = threading.local()
        self.ref_hook: Callable[[bytes], Any] | None = None
        self.register(Redacted, "wayline.Redacted")  # an erased value decodes everywhere

    def register(self, cls: type, name: str | None = None) -> type:
        """Allow ``cls`` (a dataclass, pydantic model or enum) to be decoded by ``name``."""
        if not (dataclasses.is_dataclass(cls) or _is_pydantic(cls) or issubclass(cls, enum.Enum)):
            raise CodecError(
                f"cannot register {cls.__qualname__}: only dataclasses, pydantic models and "
                "enums are registrable; convert other types to one of these or to plain data"
            )
        key = name or f"{cls.__module__}.{cls.__qualname__}"
        with self._lock:
            other = self._by_name.get(key)
            # a class defined in a function is made anew by each call: the newest wins
            local = name is None and "<locals>" in cls.__qualname__
            if other is not None and other is not cls and not local:
                raise CodecError(f"type name {key!r} is already registered to {other!r}")
            self._by_name[key] = cls
            self._names[cls] = key
        return cls

    def is_registered(self, cls: type) -> bool:
        return cls in self._names

    def dumps(self, value: Any) -> bytes:
        self._failure.error = None
        try:
            return self._pack(value)
        except CodecError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            # ormsgpack replaces the error raised in ``default`` by its own: recover ours.
            ours = self._failure.error
            if ours is not None:
                raise ours from None
            raise CodecError(f"cannot encode value: {exc}") from exc

    def loads(self, data: bytes) -> Any:
        self._failure.load_error = None
        try:
            return ormsgpack.unpackb(
                data, ext_hook=self._ext_hook, option=ormsgpack.OPT_NON_STR_KEYS
            )
        except CodecError:
            raise
        except Exception as exc:
            # ormsgpack replaces the error raised in ``ext_hook`` by "ext_hook failed":
            # recover ours (the innermost), whose message says what to do.
            ours = self._failure.load_error
            if isinstance(ours, CodecError):
                raise ours from None
            raise CodecError(f"cannot decode stored bytes: {ours or exc}") from exc

    # -- encoding ---------------------------------------------------------------------

    def _pack(self, value: Any) -> bytes:
        # msgpack has one bin type: keep bytearray apart
        if type(value) not in _ATOMS and _holds_mutable_bytes(value):
            value = _exact_bytes(value)
        try:
            return ormsgpack.packb(value, default=self._default, option=_PACK_OPTS)
        except TypeError as exc:
            if "Dict key" not in str(exc):
                raise
        # Some dict has a key that is not a str. ormsgpack would stringify UUID, date and
        # enum keys behind the codec's back, so such dicts are encoded as explicit
        # (key, value) pairs; only values that contain one pay for this walk.
        return ormsgpack.packb(_keyed(value), default=self._default, option=_PACK_OPTS)

    def _default(self, obj: Any) -> Any:
        cls = type(obj)
        if cls.__qualname__ == "TextAccessor" and cls.__module__.startswith("langchain_core."):
            return str(obj)  # langchain-core's ``message.text``, a str: stored as the str
        try:
            return self._ext_of(obj)
        except CodecError as exc:  # ormsgpack replaces it by its own: ``dumps`` restores it
            if getattr(self._failure, "error", None) is None:
                self._failure.error = exc
            raise

    def _ext_of(self, obj: Any) -> ormsgpack.Ext:
        cls = type(obj)
        if cls is tuple:
            return ormsgpack.Ext(EXT_TUPLE, self._pack(list(obj)))
        if cls is set or cls is frozenset:
            items = sorted(obj, key=_sort_key)  # set order is not stable across processes
            code = EXT_SET if cls is set else EXT_FROZENSET
            return ormsgpack.Ext(code, self._pack(items))
        if cls is dt.datetime:
            if isinstance(obj.tzinfo, zoneinfo.ZoneInfo):  # an offset alone loses the zone
                naive = obj.replace(tzinfo=None).isoformat()
                return ormsgpack.Ext(
                    EXT_ZONED_DATETIME, self._pack([naive, obj.tzinfo.key, obj.fold])
                )
            _check_tz(obj)
            return ormsgpack.Ext(EXT_DATETIME, obj.isoformat().encode())
        if cls is dt.date:
            return ormsgpack.Ext(EXT_DATE, obj.isoformat().encode())
        if cls is dt.time:
            _check_tz(obj)
            return ormsgpack.Ext(EXT_TIME, obj.isoformat().encode())
        if cls is _Bytes:
            return ormsgpack.Ext(EXT_BYTEARRAY, obj.data)
        if cls is dt.timedelta:
            return ormsgpack.Ext(
                EXT_TIMEDELTA, self._pack([obj.days, obj.seconds, obj.microseconds])
            )
        if cls is uuid.UUID:
            return ormsgpack.Ext(EXT_UUID, obj.bytes)
        if cls is decimal.Decimal:
            return ormsgpack.Ext(EXT_DECIMAL, str(obj).encode())
        if cls is int:
            return ormsgpack.Ext(EXT_BIGINT, str(obj).encode())
        if cls is _KeyedDict:
            return ormsgpack.Ext(EXT_KEYED_DICT, self._pack([[k, v] for k, v in obj.items]))
        name = self._names.get(cls) or self._known_name(cls)
        if name is None:
            self._failure.error = CodecError(
                f"values of type {cls.__module__}.{cls.__qualname__} cannot be encoded: "
                f"register the type with wayline.register_type({cls.__qualname__}) "
                "(dataclasses, pydantic models, enums) or convert it to plain data"
            )
            raise self._failure.error
        if isinstance(obj, enum.Enum):
            return ormsgpack.Ext(EXT_ENUM, self._pack([name, obj.value]))
        if dataclasses.is_dataclass(obj):
            fields = {
                f.name: getattr(obj, f.name)
                for f in dataclasses.fields(obj)
                if not (f.metadata.get(OMIT_DEFAULT) and getattr(obj, f.name) == f.default)
            }
            return ormsgpack.Ext(EXT_DATACLASS, self._pack([name, fields]))
        fields = {k: getattr(obj, k) for k in type(obj).model_fields}
        extra = getattr(obj, "__pydantic_extra__", None)
        if extra:  # model_config extra="allow": model_construct puts these back
            fields.update(extra)
        return ormsgpack.Ext(EXT_PYDANTIC, self._pack([name, fields]))

    def _known_name(self, cls: type) -> str | None:
        """Types wayline stores without registration (langchain-core messages), named from
        a fixed table and registered on first use."""
        name = lc_types.name_of(cls)
        if name is not None:
            self.register(cls, name)
        return name

    def _known_class(self, name: str) -> type | None:
        cls = lc_types.load(name)
        if cls is not None:
            self.register(cls, name)
        return cls

    # -- decoding ---------------------------------------------------------------------

    def _unpack(self, data: bytes) -> Any:
        return ormsgpack.unpackb(data, ext_hook=self._ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)

    def _ext_hook(self, code: int, data: bytes) -> Any:
        try:
            return self._decode_ext(code, data)
        except Exception as exc:
            if getattr(self._failure, "load_error", None) is None:
                self._failure.load_error = exc
            raise

    def _decode_ext(self, code: int, data: bytes) -> Any:
        if code == EXT_TUPLE:
            return tuple(self._unpack(data))
        if code == EXT_SET:
            return set(self._unpack(data))
        if code == EXT_FROZENSET:
            return frozenset(self._unpack(data))
        if code == EXT_DATETIME:
            return dt.datetime.fromisoformat(data.decode())
        if code == EXT_ZONED_DATETIME:
            naive, key, fold = self._unpack(data)
            zone = zoneinfo.ZoneInfo(key)
            return dt.datetime.fromisoformat(naive).replace(tzinfo=zone, fold=fold)
        if code == EXT_BYTEARRAY:
            return bytearray(data)
        if code == EXT_DATE:
            return dt.date.fromisoformat(data.decode())
        if code == EXT_TIME:
            return dt.time.fromisoformat(data.decode())
        if code == EXT_TIMEDELTA:
            days, seconds, micros = self._unpack(data)
            return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
        if code == EXT_UUID:
            return uuid.UUID(bytes=data)
        if code == EXT_DECIMAL:
            return decimal.Decimal(data.decode())
        if code == EXT_BIGINT:
            return int(data.decode())
        if code == EXT_KEYED_DICT:
            return {_hashable(k): v for k, v in self._unpack(data)}
        if code == EXT_REF:
            if self.ref_hook is None:
                raise CodecError("found a blob reference but no blob resolver is configured")
            return self.ref_hook(data)
        if code in (EXT_ENUM, EXT_DATACLASS, EXT_PYDANTIC):
            name, payload = self._unpack(data)
            cls = self._by_name.get(name) or self._known_class(name)
            if cls is None:
                raise CodecError(
                    f"stored value has type {name!r}, which is not registered in this process: "
                    "call wayline.register_type on it (or compile the graph whose state uses it) "
                    "before reading"
                )
            if code == EXT_ENUM:
                return cls(payload)
            if code == EXT_PYDANTIC:
                return cls.model_construct(**payload)  # type: ignore[attr-defined]
            obj: Any = object.__new__(cls)
            for key, val in payload.items():
                object.__setattr__(obj, key, val)
            for f in _omitted(cls):  # stored only when set: absent is the default
                if f.name not in payload:
                    object.__setattr__(obj, f.name, f.default)
            return obj
        raise CodecError(f"unknown extension code {code} in stored bytes")


def _omitted(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a dataclass stored only when they differ from their default."""
    found = _OMITTED.get(cls)
    if found is None:
        fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
        found = _OMITTED[cls] = tuple(f for f in fields if f.metadata.get(OMIT_DEFAULT))
    return found


_OMITTED: dict[type, tuple[dataclasses.Field[Any], ...]] = {}


class _KeyedDict:
    """A dict with a non-str key, on its way to becoming EXT_KEYED_DICT."""

    __slots__ = ("items",)

    def __init__(self, items: list[tuple[Any, Any]]) -> None:
        self.items = items


def _keyed(value: Any) -> Any:
    """Replace every dict with a non-str key, at any depth of plain containers, by a
    ``_KeyedDict``. Dataclass and model fields are reached through ``_pack`` again."""
    cls = type(value)
    if cls is dict:
        if all(type(k) is str for k in value):
            return {k: _keyed(v) for k, v in value.items()}
        return _KeyedDict([(_keyed(k), _keyed(v)) for k, v in value.items()])
    if cls is list:
        return [_keyed(v) for v in value]
    if cls is tuple:
        return tuple(_keyed(v) for v in value)
    return value


class _Bytes:
    """A bytearray on its way to becoming EXT_BYTEARRAY."""

    __slots__ = ("data",)

    def __init__(self, data: bytearray | memoryview) -> None:
        self.data = bytes(data)


_ATOMS = frozenset({str, int, float, bool, bytes, type(None)})
"""Types that hold nothing else: most values a step writes, which skip the walk below."""


def _holds_mutable_bytes(value: Any) -> bool:
    """Whether a bytearray or memoryview sits anywhere in plain containers (ormsgpack
    writes them as bytes, which would read back as another type)."""
    stack = [value]
    while stack:
        v = stack.pop()
        cls = type(v)
        if cls is bytearray or cls is memoryview:
            return True
        if cls is dict:
            stack.extend(v.values())
        elif cls is list or cls is tuple or cls is set or cls is frozenset:
            stack.extend(v)
    return False


def _exact_bytes(value: Any) -> Any:
    cls = type(value)
    if cls is bytearray:
        return _Bytes(value)
    if cls is memoryview:
        raise CodecError(
            "a memoryview cannot be stored (it is a view of another object's memory): "
            "store bytes(view) or bytearray(view)"
        )
    if cls is dict:
        return {k: _exact_bytes(v) for k, v in value.items()}
    if cls is list:
        return [_exact_bytes(v) for v in value]
    if cls is tuple:
        return tuple(_exact_bytes(v) for v in value)
    if cls is set or cls is frozenset:
        raise CodecError("a set cannot hold a bytearray (it is unhashable)")  # unreachable
    return value


def _check_tz(value: dt.datetime | dt.time) -> None:
    """Only offsets that round-trip through ISO 8601 exactly: none, or a fixed UTC offset
    without a custom name (a ZoneInfo datetime has its own extension)."""
    tz = value.tzinfo
    if tz is None:
        return
    offset = tz.utcoffset(None)
    fixed = type(tz) is dt.timezone and offset is not None
    if fixed and tz.tzname(None) == dt.timezone(offset).tzname(None):  # type: ignore[arg-type]
        return
    raise CodecError(
        f"a {type(value).__name__} with time zone {tz!r} ({type(tz).__qualname__}) would "
        "not read back the same: use a datetime with zoneinfo.ZoneInfo(name), or a fixed "
        "offset (datetime.timezone(timedelta(...))) without a custom name"
    )


def _is_pydantic(cls: type) -> bool:
    return isinstance(getattr(cls, "model_fields", None), dict) and hasattr(cls, "model_construct")


def _sort_key(value: Any) -> tuple[str, str]:
    return (type(value).__name__, repr(value))


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(k) for k in key)
    return key


default_codec = Codec()


def register_type(cls: type, name: str | None = None) -> type:
    """Register a user type with the default codec; usable as a class decorator."""
    return default_codec.register(cls, name)
