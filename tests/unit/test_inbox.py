"""The queued-input format: breakpoints ride with the input, and an inbox written before
they existed (pinned bytes below) still decodes the same; and a worker honours them."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from wayline import END, START, StateGraph
from wayline.client import Wayline
from wayline.codec import default_codec
from wayline.graph.checkpoint import (
    decode_inbox,
    encode_inbox,
    inbox_breakpoints,
    inbox_stream_modes,
)
from wayline.graph.types import Command
from wayline.worker import Worker, WorkerConfig

OLD_INPUT = bytes.fromhex("92a5696e70757481a16e01")  # ["input", {"n": 1}], before breakpoints
OLD_COMMAND = bytes.fromhex("94a7636f6d6d616e64a3796573c090")  # ["command", "yes", None, []]


def test_an_old_inbox_decodes_unchanged() -> None:
    assert encode_inbox(default_codec, {"n": 1}) == OLD_INPUT  # no breakpoints: same bytes
    assert encode_inbox(default_codec, Command(resume="yes")) == OLD_COMMAND
    assert decode_inbox(default_codec, OLD_INPUT) == {"n": 1}
    old = decode_inbox(default_codec, OLD_COMMAND)
    assert isinstance(old, Command) and old.resume == "yes" and old.goto == []
    assert inbox_breakpoints(default_codec, OLD_INPUT) is None
    assert inbox_breakpoints(default_codec, OLD_COMMAND) is None
    assert inbox_stream_modes(default_codec, OLD_INPUT) == frozenset()


def test_breakpoints_ride_with_input_and_commands() -> None:
    data = encode_inbox(default_codec, {"n": 1}, (["b"], "*"))
    assert decode_inbox(default_codec, data) == {"n": 1}
    assert inbox_breakpoints(default_codec, data) == (["b"], "*")
    cmd = encode_inbox(default_codec, Command(resume=2), (None, ("a",)))
    assert decode_inbox(default_codec, cmd).resume == 2
    assert inbox_breakpoints(default_codec, cmd) == (None, ["a"])


def test_stream_modes_ride_beside_or_without_breakpoints() -> None:
    data = encode_inbox(default_codec, {"n": 1}, None, ["custom"])
    assert decode_inbox(default_codec, data) == {"n": 1}
    assert inbox_stream_modes(default_codec, data) == {"custom"}
    assert inbox_breakpoints(default_codec, data) is None  # the graph's own still apply
    both = encode_inbox(default_codec, Command(resume=2), (["b"], None), ("custom",))
    assert decode_inbox(default_codec, both).resume == 2
    assert inbox_breakpoints(default_codec, both) == (["b"], None)
    assert inbox_stream_modes(default_codec, both) == {"custom"}
    assert encode_inbox(default_codec, {"n": 1}, None, ()) == OLD_INPUT  # none: same bytes


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _graph(url: str) -> Any:
    g = StateGraph(State, name="bp")
    g.add_node("a", lambda s: {"items": ["a"]})
    g.add_node("b", lambda s: {"items": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(url)


def test_a_worker_pauses_where_the_start_said_and_continues(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bp.db'}"
    graph, client = _graph(url), Wayline(url)
    run_id = client.start(graph, {"items": []}, interrupt_before=["b"])
    Worker(url, graph, WorkerConfig(poll_interval=0.02)).run(max_runs=1)
    paused = client.wait(run_id, timeout=10)
    assert paused.status == "interrupted" and paused.next_nodes == ("b",)
    client.continue_run(run_id)
    Worker(url, graph, WorkerConfig(poll_interval=0.02)).run(max_runs=1)
    assert client.wait(run_id, timeout=10).status == "done"
    state = graph.get_state({"configurable": {"thread_id": run_id}})
    assert state.values == {"items": ["a", "b"]}
