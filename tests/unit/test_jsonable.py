"""A stream's events are encoded by ``dumps_jsonable``: what JSON holds as it is goes
straight to the encoder, the rest through ``to_jsonable``; the text is the same either way."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from types import MappingProxyType
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from wayline.graph.types import Interrupt
from wayline.server.jsonable import dumps_jsonable, to_jsonable


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int
    tags: tuple[str, ...]


class Order(BaseModel):
    sku: str
    at: dt.datetime


VALUES: list[Any] = [
    {"n": 1, "log": ["a", "b"], "nested": {"x": None, "y": [1.5, True]}},
    {"pair": (1, 2), "set": {7}, "frozen": frozenset({"k"})},
    {"point": Point(1, ("a",)), "order": Order(sku="s", at=dt.datetime(2026, 1, 2, 3, 4))},
    {"when": dt.date(2026, 12, 4), "blob": b"\x00\xff", "color": Color.RED, "level": Level.HIGH},
    {"messages": [HumanMessage("hi", id="1"), AIMessage("hello", id="2")]},
    {"question": Interrupt("approve?", "i-1", None, None, None)},
    {"proxy": MappingProxyType({"a": 1}), "list_of_sets": [{1}]},
    {(1, 2): "a tuple key: refused by JSON, so the whole value goes the long way"},
]


@pytest.mark.parametrize("value", VALUES)
def test_the_direct_encoding_is_the_copy_s_encoding(value: Any) -> None:
    assert dumps_jsonable(value) == json.dumps(to_jsonable(value), separators=(",", ":"))


def test_keys_are_written_as_json_writes_them() -> None:
    """``True`` as ``"true"`` and an enum key as its value, as LangGraph's server (orjson
    with non-string keys) writes them; ``to_jsonable`` alone would write ``"True"``."""
    assert dumps_jsonable({True: 1, None: 2, 3: 4}) == '{"true":1,"null":2,"3":4}'
    assert dumps_jsonable({Color.RED: 1}) == '{"red":1}'
