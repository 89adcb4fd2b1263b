"""Labels on channels: ``Classified`` beside any reducer, on TypedDict, dataclass and
pydantic states; unlabelled keys are "default" and keep the fingerprint they had."""

from __future__ import annotations

import dataclasses
import operator
from typing import Annotated, TypedDict

import pydantic
import pytest

from wayline import Classified, StateGraph
from wayline.codec import Codec
from wayline.errors import GraphError
from wayline.graph.channels import AppendLog, LastValue, ReducerChannel
from wayline.graph.schema import StateSchema


class Typed(TypedDict):
    msgs: Annotated[list[str], operator.add, Classified("pii")]
    best: Annotated[int, Classified("secret"), max]
    email: Annotated[str, Classified("pii")]
    n: int


@dataclasses.dataclass
class Data:
    msgs: Annotated[list[str], operator.add, Classified("pii")] = dataclasses.field(
        default_factory=list
    )
    n: int = 0


class Model(pydantic.BaseModel):
    msgs: Annotated[list[str], operator.add, Classified("pii")] = []
    n: int = 0


def test_labels_sit_beside_any_reducer_on_every_kind_of_state() -> None:
    typed = StateSchema.from_class(Typed, Codec())
    assert dict(typed.classes) == {"msgs": "pii", "best": "secret", "email": "pii"}
    assert isinstance(typed.channels["msgs"], AppendLog)
    assert isinstance(typed.channels["best"], ReducerChannel)
    assert isinstance(typed.channels["email"], LastValue)
    for schema in (Data, Model):
        assert dict(StateSchema.from_class(schema, Codec()).classes) == {"msgs": "pii"}


def test_unlabelled_keys_keep_their_fingerprint_and_labels_change_it() -> None:
    class Plain(TypedDict):
        msgs: Annotated[list[str], operator.add]
        n: int

    class Labelled(TypedDict):
        msgs: Annotated[list[str], operator.add, Classified("pii")]
        n: int

    plain = StateSchema.from_class(Plain, Codec())
    labelled = StateSchema.from_class(Labelled, Codec())
    assert plain.classes == {}
    assert plain.fingerprint != labelled.fingerprint


def test_bad_labels_are_refused() -> None:
    with pytest.raises(ValueError, match="lower-case"):
        Classified("PII data")

    class Twice(TypedDict):
        x: Annotated[str, Classified("pii"), Classified("secret")]

    with pytest.raises(GraphError, match="more than one data class"):
        StateGraph(Twice)
