"""The codec: what round-trips, what is refused, and that decoding never runs stored code."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import pickle
import uuid
import zoneinfo
from typing import Any

import ormsgpack
import pydantic
import pytest

import wayline
from wayline.codec import Codec, default_codec, register_type
from wayline.errors import CodecError, WaylineError

# -- types used below (module level, so their registry names are stable) ------------


@dataclasses.dataclass
class Point:
    x: int
    y: int


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenTag:
    name: str
    created: dt.datetime


@dataclasses.dataclass
class Line:
    start: Point
    end: Point
    tags: tuple[str, ...] = ()


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(pydantic.BaseModel):
    city: str
    zip_code: str = pydantic.Field(alias="zipCode")


class Customer(pydantic.BaseModel):
    name: str
    address: Address
    color: Color = Color.RED
    since: dt.date | None = None


class Loose(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    known: int


INIT_CALLS: list[str] = []


@dataclasses.dataclass
class Audited:
    value: int

    def __post_init__(self) -> None:
        INIT_CALLS.append("post_init")


class Validated(pydantic.BaseModel):
    value: int

    @pydantic.field_validator("value")
    @classmethod
    def _count(cls, v: int) -> int:
        INIT_CALLS.append("validator")
        return v


class Plain:
    """Neither a dataclass, a pydantic model nor an enum."""

    def __init__(self, v: int) -> None:
        self.v = v


@pytest.fixture
def codec() -> Codec:
    c = Codec()
    for cls in (Point, FrozenTag, Line, Color, Level, Address, Customer, Loose, Audited, Validated):
        c.register(cls)
    return c


def roundtrip(codec: Codec, value: Any) -> Any:
    return codec.loads(codec.dumps(value))


# -- standard types ------------------------------------------------------------------

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))

STANDARD_VALUES = [
    pytest.param((1, "a", (2.5, None)), id="nested-tuple"),
    pytest.param([(1, 2), [3, (4,)]], id="tuples-in-lists"),
    pytest.param({"s", "t", "u"}, id="set"),
    pytest.param(frozenset({1, 2, 3}), id="frozenset"),
    pytest.param(dt.datetime(2024, 2, 29, 23, 59, 58, 123456), id="naive-datetime"),
    pytest.param(dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=IST), id="aware-datetime"),
    pytest.param(dt.datetime(2024, 1, 2, tzinfo=dt.UTC), id="utc-datetime"),
    pytest.param(dt.date(2020, 2, 29), id="date"),
    pytest.param(dt.time(1, 2, 3, 4), id="time"),
    pytest.param(dt.time(1, 2, tzinfo=IST), id="aware-time"),
    pytest.param(dt.timedelta(days=-1, seconds=5, microseconds=7), id="negative-timedelta"),
    pytest.param(dt.timedelta(days=400, hours=3), id="timedelta"),
    pytest.param(uuid.UUID("12345678-1234-5678-1234-567812345678"), id="uuid"),
    pytest.param(decimal.Decimal("-12345678901234567890.000000001"), id="decimal"),
    pytest.param(b"\x00\xffbinary", id="bytes"),
    pytest.param(2**64 + 1, id="bigint-over-u64"),
    pytest.param(-(2**63) - 1, id="bigint-under-i64"),
    pytest.param(-(2**200), id="huge-negative-int"),
    pytest.param(2**63, id="u64-range"),
    pytest.param({(1, 2): "pair", (3, (4, 5)): "nested"}, id="tuple-keys"),
    pytest.param({1: "int key", "s": [1.5, True, None]}, id="mixed-keys"),
    pytest.param(float("inf"), id="inf"),
]


@pytest.mark.parametrize("value", STANDARD_VALUES)
def test_standard_types_round_trip_with_their_type(codec: Codec, value: Any) -> None:
    out = roundtrip(codec, value)
    assert out == value
    assert type(out) is type(value)


def test_containers_keep_inner_types(codec: Codec) -> None:
    value = {"when": [dt.date(2021, 1, 1), (uuid.UUID(int=7), decimal.Decimal("0.10"))]}
    out = roundtrip(codec, value)
    assert out == value
    inner = out["when"][1]
    assert isinstance(inner, tuple)
    assert isinstance(inner[0], uuid.UUID)
    assert str(inner[1]) == "0.10"  # the exponent survives, not only the numeric value


def test_decimal_keeps_its_exponent(codec: Codec) -> None:
    assert str(roundtrip(codec, decimal.Decimal("1.10"))) == "1.10"


def test_aware_datetime_keeps_its_offset(codec: Codec) -> None:
    value = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=IST)
    out = roundtrip(codec, value)
    assert out.utcoffset() == dt.timedelta(hours=5, minutes=30)


def test_set_encoding_does_not_depend_on_insertion_order(codec: Codec) -> None:
    items = [f"item-{i}" for i in range(50)]
    forward, backward = set(), set()
    for item in items:
        forward.add(item)
    for item in reversed(items):
        backward.add(item)
    assert codec.dumps(forward) == codec.dumps(backward)


@pytest.mark.parametrize(
    "key",
    [uuid.UUID(int=1), dt.date(2020, 1, 1), Color.RED, Level.HIGH],
    ids=["uuid", "date", "enum", "int-enum"],
)
def test_non_string_dict_keys_keep_their_type(codec: Codec, key: Any) -> None:
    out = roundtrip(codec, {key: "v"})
    (out_key,) = out
    assert type(out_key) is type(key)
    assert out_key == key


def test_typed_dict_keys_survive_at_any_depth(codec: Codec) -> None:
    value = (
        [{uuid.UUID(int=3): {dt.date(2020, 1, 1): {Color.RED: 1}}}],
        Line(Point(0, 0), Point(1, 1), tags=("k",)),
        {2**70: "big", frozenset({1}): "frozen", None: 0, b"raw": 1, "s": {(1, 2): 3}},
    )
    out = roundtrip(codec, value)
    assert out == value
    (level1,) = out[0]
    (inner_date,) = level1[uuid.UUID(int=3)]
    assert type(inner_date) is dt.date
    assert next(iter(level1[uuid.UUID(int=3)][inner_date])) is Color.RED


# -- user types ----------------------------------------------------------------------


def test_dataclasses_round_trip_nested(codec: Codec) -> None:
    value = Line(Point(1, 2), Point(3, 4), tags=("a", "b"))
    out = roundtrip(codec, value)
    assert out == value
    assert isinstance(out.start, Point)
    assert out.tags == ("a", "b")


def test_frozen_slots_dataclass_round_trips(codec: Codec) -> None:
    value = FrozenTag("t", dt.datetime(2024, 5, 6, 7, 8, tzinfo=dt.UTC))
    out = roundtrip(codec, value)
    assert out == value
    assert isinstance(out, FrozenTag)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("value", [Color.GREEN, Level.HIGH, [Level.LOW, Color.RED]])
def test_enums_round_trip_as_members(codec: Codec, value: Any) -> None:
    out = roundtrip(codec, value)
    assert out == value
    members = out if isinstance(out, list) else [out]
    originals = value if isinstance(value, list) else [value]
    assert [type(m) for m in members] == [type(m) for m in originals]


def test_pydantic_models_round_trip_nested_with_aliases(codec: Codec) -> None:
    value = Customer(
        name="Ada",
        address=Address(city="London", zipCode="NW1"),
        color=Color.GREEN,
        since=dt.date(2019, 3, 1),
    )
    out = roundtrip(codec, value)
    assert out == value
    assert isinstance(out.address, Address)
    assert out.address.zip_code == "NW1"
    assert out.color is Color.GREEN


def test_pydantic_extra_fields_survive(codec: Codec) -> None:
    value = Loose(known=1, extra_field=[1, 2])  # type: ignore[call-arg]
    out = roundtrip(codec, value)
    assert out.model_extra == {"extra_field": [1, 2]}
    assert out == value


def test_decoding_does_not_call_init_or_validators(codec: Codec) -> None:
    payload = codec.dumps([Audited(1), Validated(value=2)])
    INIT_CALLS.clear()
    audited, validated = codec.loads(payload)
    assert INIT_CALLS == []
    assert audited == Audited(1)
    assert validated.value == 2


def test_unregistered_user_type_fails_to_encode_with_advice() -> None:
    codec = Codec()
    with pytest.raises(CodecError) as info:
        codec.dumps({"nested": [Point(1, 2)]})
    message = str(info.value)
    assert "Point" in message
    assert "register_type" in message


def test_plain_object_fails_to_encode() -> None:
    with pytest.raises(CodecError, match="Plain"):
        Codec().dumps(Plain(1))


def test_unregistered_type_name_fails_to_decode_and_says_so(codec: Codec) -> None:
    payload = codec.dumps(Point(1, 2))
    with pytest.raises(CodecError) as info:
        Codec().loads(payload)
    message = str(info.value)
    assert "Point" in message
    assert "register_type" in message


def test_unregistered_type_nested_in_a_container_fails_to_decode(codec: Codec) -> None:
    payload = codec.dumps({"points": [(Point(1, 2),)]})
    with pytest.raises(CodecError, match="Point"):
        Codec().loads(payload)


def test_registered_name_decides_the_class() -> None:
    writer, reader = Codec(), Codec()
    writer.register(Point, "shapes.Point")

    @dataclasses.dataclass
    class OtherPoint:
        x: int
        y: int

    reader.register(OtherPoint, "shapes.Point")
    out = reader.loads(writer.dumps(Point(5, 6)))
    assert isinstance(out, OtherPoint)
    assert (out.x, out.y) == (5, 6)


def test_register_refuses_non_registrable_types() -> None:
    with pytest.raises(CodecError, match="only dataclasses, pydantic models and enums"):
        Codec().register(Plain)


def test_register_refuses_a_name_taken_by_another_class() -> None:
    codec = Codec()
    codec.register(Point, "taken")
    codec.register(Point, "taken")  # the same class again is fine
    with pytest.raises(CodecError, match="already registered"):
        codec.register(Line, "taken")


def test_register_type_uses_the_default_codec_and_works_as_decorator() -> None:
    @dataclasses.dataclass
    class Registered:
        v: int

    returned = register_type(Registered, "tests.unit.test_codec.Registered")
    assert returned is Registered
    assert default_codec.is_registered(Registered)
    assert wayline.register_type is register_type
    assert default_codec.loads(default_codec.dumps(Registered(3))) == Registered(3)


# -- no code execution, corrupt input -------------------------------------------------

SIDE_EFFECTS: list[str] = []


class Exploit:
    def __reduce__(self) -> tuple[Any, ...]:
        return (SIDE_EFFECTS.append, ("executed",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_payloads_are_never_executed(codec: Codec, protocol: int) -> None:
    SIDE_EFFECTS.clear()
    payload = pickle.dumps(Exploit(), protocol=protocol)
    try:
        out = codec.loads(payload)
    except CodecError:
        out = None
    assert SIDE_EFFECTS == []
    assert not isinstance(out, Exploit)


def test_unknown_extension_code_fails_to_decode(codec: Codec) -> None:
    with pytest.raises(CodecError, match="unknown extension code 99"):
        codec.loads(ormsgpack.packb(ormsgpack.Ext(99, b"")))


def test_blob_reference_without_resolver_fails_to_decode(codec: Codec) -> None:
    with pytest.raises(CodecError, match="blob"):
        codec.loads(ormsgpack.packb(ormsgpack.Ext(15, b"digest")))


def test_invalid_bytes_raise_codec_error(codec: Codec) -> None:
    with pytest.raises(CodecError):
        codec.loads(b"\xc1")


def test_codec_error_is_a_wayline_error() -> None:
    assert issubclass(CodecError, WaylineError)


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2026, 3, 29, 2, 30, tzinfo=zoneinfo.ZoneInfo("Europe/Berlin")),
        dt.datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("America/New_York")),
        dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-3, minutes=-30))),
        dt.time(9, 15, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    ],
)
def test_time_zones_read_back_exactly(codec: Codec, value: Any) -> None:
    back = codec.loads(codec.dumps(value))
    assert back == value and back.tzinfo == value.tzinfo and back.fold == value.fold
    later = back + dt.timedelta(days=200) if isinstance(back, dt.datetime) else back
    if isinstance(value.tzinfo, zoneinfo.ZoneInfo):  # the zone, not an offset: DST applies
        assert later.utcoffset() == (value + dt.timedelta(days=200)).utcoffset()


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1), "CET")),
        dt.time(9, tzinfo=zoneinfo.ZoneInfo("Europe/Berlin")),
        memoryview(b"view"),
    ],
)
def test_values_that_would_not_read_back_the_same_are_refused(codec: Codec, value: Any) -> None:
    with pytest.raises(CodecError, match=r"would not read back the same|memoryview"):
        codec.dumps(value)


def test_bytearray_stays_a_bytearray_at_any_depth(codec: Codec) -> None:
    value = {"a": [bytearray(b"x"), b"y", (bytearray(b"z"), 1)], "b": bytearray()}
    back = codec.loads(codec.dumps(value))
    assert back == value
    assert type(back["a"][0]) is bytearray and type(back["a"][1]) is bytes
    assert type(back["a"][2][0]) is bytearray and type(back["b"]) is bytearray
