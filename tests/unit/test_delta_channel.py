"""``DeltaChannel`` (LangGraph 1.2's batch reducer) folds one step's writes in one call, and
a state rebuilt from the store folds the same batches: a reducer that is not
batching-invariant still reconstructs the state that ran."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest

from wayline import START, StateGraph, connect
from wayline.errors import InvalidUpdateError, ReducerError
from wayline.graph.channels import DeltaChannel
from wayline.graph.channels.overwrite import Overwrite


def batch_sizes(value: list[int], writes: list[Any]) -> list[int]:
    """Not batching-invariant on purpose: it records how many writes each call got."""
    return [*value, len(writes)]


def test_a_step_is_one_call_and_an_overwrite_replaces_it() -> None:
    channel = DeltaChannel(batch_sizes).bind("log", list)
    assert channel.get() == [] and channel.key == "log"
    assert channel.update(["a", "b", "c"]) and channel.get() == [3]
    assert not channel.update([])
    channel.update(["x", Overwrite([7]), "y"])
    assert channel.get() == [7]
    with pytest.raises(InvalidUpdateError, match="only one Overwrite"):
        channel.update([Overwrite([1]), Overwrite([2])])
    assert channel.get() == [7]


def test_bad_configuration_and_a_failing_reducer_say_so() -> None:
    with pytest.raises(ValueError, match="positive int"):
        DeltaChannel(batch_sizes, snapshot_frequency=0)

    def broken(value: Any, writes: list[Any]) -> Any:
        raise KeyError("nope")

    channel = DeltaChannel(broken).bind("log", list)
    with pytest.raises(ReducerError):
        channel.update([1])


class State(TypedDict):
    log: Annotated[list[int], DeltaChannel(batch_sizes)]


def test_a_rebuilt_state_folds_the_batches_that_ran() -> None:
    store = connect("sqlite:///:memory:")
    graph = (
        StateGraph(State)
        .add_node("a", lambda s: {"log": [0]})
        .add_node("b", lambda s: {"log": [0]})
        .add_node("c", lambda s: {"log": [0]})
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(START, "c")
    )
    config = {"configurable": {"thread_id": "t"}}
    live = graph.compile(checkpointer=store).invoke({"log": [0]}, config)
    assert live["log"] == [1, 3]  # the input alone, then the three nodes' writes in one call
    fresh = graph.compile(checkpointer=store)  # nothing cached: folded from the stored steps
    assert fresh.get_state(config).values == live
    assert [s.values.get("log") for s in fresh.get_state_history(config)][:2] == [[1, 3], [1]]
    store.close()
