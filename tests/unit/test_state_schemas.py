"""State schemas: TypedDict, dataclass and pydantic, with nested user types that round-trip."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import operator
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pydantic
import pytest

from wayline import END, START, StateGraph
from wayline.codec import Codec
from wayline.errors import CodecError


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass(frozen=True)
class Ticket:
    id: uuid.UUID
    priority: Priority
    opened: dt.datetime
    amount: decimal.Decimal
    labels: tuple[str, ...] = ()


class Note(pydantic.BaseModel):
    text: str
    tags: set[str] = set()
    ticket: Ticket | None = None


class TDState(TypedDict):
    tickets: Annotated[list[Ticket], operator.add]
    notes: dict[str, Note]
    seen: set[str]


@dataclasses.dataclass
class DCState:
    tickets: Annotated[list[Ticket], operator.add] = dataclasses.field(default_factory=list)
    note: Note | None = None
    count: int = 0


class PState(pydantic.BaseModel):
    tickets: Annotated[list[Ticket], operator.add] = []
    note: Note | None = None
    count: int = 0


TICKET = Ticket(
    id=uuid.UUID(int=42),
    priority=Priority.HIGH,
    opened=dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC),
    amount=decimal.Decimal("19.90"),
    labels=("billing", "vip"),
)


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def typeddict_graph(codec: Codec | None = None) -> StateGraph:
    def triage(state: TDState) -> dict[str, Any]:
        assert isinstance(state, dict)
        (ticket,) = state["tickets"]
        note = Note(text="escalate", tags={"urgent", "money"}, ticket=ticket)
        return {
            "tickets": [dataclasses.replace(ticket, priority=Priority.LOW)],
            "notes": {"n1": note},
        }

    def mark(state: TDState) -> dict[str, Any]:
        return {"seen": {t.priority.value for t in state["tickets"]}}

    g = StateGraph(TDState, codec=codec)
    g.add_sequence([triage, mark])
    g.add_edge(START, "triage")
    g.add_edge("mark", END)
    return g


def test_typeddict_state_with_nested_types_round_trips(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    out = typeddict_graph().compile(url).invoke({"tickets": [TICKET]}, cfg())
    assert out["seen"] == {"high", "low"}
    assert out["notes"]["n1"].ticket == TICKET

    # a graph with its own, empty codec: compiling registers the types its state declares
    fresh = typeddict_graph(codec=Codec()).compile(url)
    values = fresh.get_state(cfg()).values
    assert values == out
    first, second = values["tickets"]
    assert isinstance(first, Ticket) and first.priority is Priority.HIGH
    assert second.priority is Priority.LOW
    assert isinstance(values["notes"]["n1"], Note)
    assert values["notes"]["n1"].tags == {"urgent", "money"}
    assert isinstance(values["seen"], set)


def test_dataclass_state_is_passed_to_nodes_as_the_dataclass(tmp_path: Path) -> None:
    seen_types: list[type] = []

    def bump(state: DCState) -> dict[str, Any]:
        seen_types.append(type(state))
        return {"count": state.count + 1, "tickets": [TICKET], "note": Note(text="hi")}

    def build() -> StateGraph:
        g = StateGraph(DCState)
        g.add_node("bump", bump)
        g.add_edge(START, "bump")
        g.add_conditional_edges("bump", lambda s: "bump" if s.count < 2 else END)
        return g

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    out = build().compile(url).invoke(DCState(count=0), cfg())
    assert seen_types == [DCState, DCState]
    assert out == {"tickets": [TICKET, TICKET], "note": Note(text="hi"), "count": 2}
    assert build().compile(url).get_state(cfg()).values == out


def test_pydantic_state_is_passed_to_nodes_as_the_model(tmp_path: Path) -> None:
    seen: list[Any] = []

    def bump(state: PState) -> dict[str, Any]:
        seen.append(state)
        return {"count": state.count + 1, "tickets": [TICKET]}

    def annotate(state: PState) -> PState:
        return PState(note=Note(text=f"{len(state.tickets)} tickets", ticket=state.tickets[0]))

    def build() -> StateGraph:
        g = StateGraph(PState)
        g.add_sequence([bump, annotate])
        g.add_edge(START, "bump")
        return g

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    out = build().compile(url).invoke({"count": 5}, cfg())
    assert isinstance(seen[0], PState) and seen[0].count == 5
    # a model returned as an update writes only the fields it set
    assert out == {"tickets": [TICKET], "note": Note(text="1 tickets", ticket=TICKET), "count": 6}
    restored = build().compile(url).get_state(cfg()).values
    assert restored == out
    assert isinstance(restored["note"], Note)


def test_pydantic_model_input() -> None:
    g = StateGraph(PState)
    g.add_node("noop", lambda s: {})
    g.set_entry_point("noop")
    out = g.compile().invoke(PState(count=3), cfg())
    assert out["count"] == 3


def test_a_value_of_an_undeclared_user_type_fails_to_store() -> None:
    @dataclasses.dataclass
    class Stray:
        v: int

    class Loose(TypedDict):
        anything: Any

    g = StateGraph(Loose, codec=Codec())
    g.add_node("put", lambda s: {"anything": Stray(1)})
    g.set_entry_point("put")
    with pytest.raises(CodecError, match=r"Stray.*register_type"):
        g.compile().invoke({"anything": None}, cfg())


def keep_max(a: int, b: int) -> int:
    return max(a, b)


def dearest(a: Ticket, b: Ticket) -> Ticket:
    return a if a.amount >= b.amount else b


class Maxed(TypedDict):
    best: Annotated[Ticket, dearest]
    peak: Annotated[int, keep_max]


def test_reducer_on_a_type_that_cannot_be_built_empty_starts_from_the_first_write() -> None:
    cheap = dataclasses.replace(TICKET, amount=decimal.Decimal("1"))
    g = StateGraph(Maxed)
    g.add_node("a", lambda s: {"best": cheap, "peak": 3})
    g.add_node("b", lambda s: {"best": TICKET, "peak": 1})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    out = g.compile().invoke({"peak": -5})
    assert out == {"best": TICKET, "peak": 3}
