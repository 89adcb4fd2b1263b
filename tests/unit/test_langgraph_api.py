"""The LangGraph-shaped surface: module paths, messages, RetryPolicy, subgraph and
functional-API durability details that the compatibility programs do not show."""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
from typing import Annotated, Any

import ormsgpack
import pytest
from typing_extensions import TypedDict

import wayline
from wayline.codec import EXT_PYDANTIC, Codec
from wayline.effects.retry import RetryPolicy, default_retry_on
from wayline.errors import CodecError
from wayline.func import entrypoint
from wayline.graph import END, START, MessagesState, StateGraph, add_messages
from wayline.graph.message import REMOVE_ALL_MESSAGES

lc = pytest.importorskip("langchain_core.messages", reason="messages need langchain-core")


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_importing_wayline_imports_neither_langgraph_nor_langchain() -> None:
    """Only ``wayline.prebuilt`` (langchain-core tools and models) imports langchain-core."""
    code = (
        "import sys, wayline, wayline.graph, wayline.graph.message, wayline.types, "
        "wayline.func, wayline.config, wayline.runtime, wayline.errors\n"
        "print(sorted(m for m in sys.modules if m.startswith(('langgraph', 'langchain'))))\n"
        "import wayline.prebuilt\n"
        "print(any(m.startswith('langgraph') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "False"]


def test_add_messages_appends_replaces_removes_and_clears() -> None:
    a = lc.HumanMessage("a", id="1")
    b = lc.AIMessage("b", id="2")
    merged = add_messages([a], [b, lc.HumanMessage("a2", id="1")])
    assert [(m.id, m.content) for m in merged] == [("1", "a2"), ("2", "b")]
    assert [m.id for m in add_messages(merged, [lc.RemoveMessage(id="1")])] == ["2"]
    cleared = add_messages(merged, [lc.RemoveMessage(id=REMOVE_ALL_MESSAGES), lc.AIMessage("z")])
    assert [m.content for m in cleared] == ["z"]
    with pytest.raises(ValueError, match="doesn't exist"):
        add_messages(merged, [lc.RemoveMessage(id="nope")])
    assert [
        m.type for m in add_messages([], [("user", "hi"), {"role": "ai", "content": "yo"}])
    ] == [
        "human",
        "ai",
    ]


def test_message_ids_are_derived_so_replay_is_exact() -> None:
    """A message without id gets the same id every time it is folded (LangGraph's uuid4
    would make reconstruction differ from what ran); as LangGraph's, the id is set on the
    message object given, so a caller's input carries the id its state gave it."""
    given, twin = lc.HumanMessage("hi"), lc.HumanMessage("hi")
    first, again = add_messages([], [given]), add_messages([], [twin])
    assert first[0].id == again[0].id == given.id == twin.id is not None
    assert first[0] is given

    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [lc.AIMessage(f"echo {state['messages'][-1].content}")]}

    g = StateGraph(MessagesState)
    g.add_node("bot", bot)
    g.add_edge(START, "bot")
    app = g.compile()
    app.invoke({"messages": [("user", "one")]}, cfg("m"))
    app.invoke({"messages": [("user", "two")]}, cfg("m"))
    assert app.verify(cfg("m")).ok


def test_openai_formatted_history_replays_exactly() -> None:
    """``add_messages(format="langchain-openai")`` formats the merged history each fold; the
    fold is a function of the stored writes, so reconstruction gives the state that ran."""

    class State(TypedDict):
        messages: Annotated[list[Any], add_messages(format="langchain-openai")]

    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A"}}

    def bot(state: State) -> dict[str, Any]:
        return {"messages": [lc.HumanMessage([{"type": "text", "text": "see"}, block])]}

    g = StateGraph(State)
    g.add_node("bot", bot)
    g.add_edge(START, "bot")
    app = g.compile()
    app.invoke({"messages": [("user", "one")]}, cfg("fmt"))
    out = app.invoke({"messages": [("user", "two")]}, cfg("fmt"))
    assert [m.content[1]["type"] for m in out["messages"] if isinstance(m.content, list)] == [
        "image_url",
        "image_url",
    ]
    assert app.verify(cfg("fmt")).ok
    with pytest.raises(ValueError, match="Unrecognized format"):
        add_messages([], [], format="other")


def test_messages_are_stored_by_name_and_read_without_registration() -> None:
    messages = [lc.HumanMessage("q", id="1"), lc.ToolMessage("r", tool_call_id="c", id="2")]
    assert Codec().loads(Codec().dumps(messages)) == messages  # fresh codecs, no registry


def test_a_stored_type_name_outside_the_table_is_refused() -> None:
    inner = ormsgpack.packb(["langchain.NotAMessage", {"content": "x"}])
    data = ormsgpack.packb(ormsgpack.Ext(EXT_PYDANTIC, inner))
    with pytest.raises(CodecError, match="not registered"):
        Codec().loads(data)


def test_retry_policy_takes_langgraph_names_and_default_retry_on() -> None:
    policy = RetryPolicy(0.1, 3.0, 9.0, 4, False)
    assert (policy.initial_interval, policy.backoff_factor, policy.max_interval) == (0.1, 3.0, 9.0)
    assert policy.delay(2) == pytest.approx(0.3) and policy.delay(10) == 9.0
    assert RetryPolicy(initial_delay=0.2).initial_interval == 0.2  # wayline's earlier name
    assert not default_retry_on(ValueError()) and default_retry_on(ConnectionError())
    assert RetryPolicy(retry_on=(KeyError, OSError)).matches(KeyError())
    assert not RetryPolicy(retry_on=KeyError).matches(ValueError())


class S(TypedDict):
    log: Annotated[list[Any], operator.add]


def test_astream_custom_and_abatch() -> None:
    from wayline.config import get_stream_writer

    def node(state: S) -> dict[str, Any]:
        get_stream_writer()("hello")
        return {"log": ["x"]}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    app = g.compile()

    async def go() -> tuple[list[Any], list[Any]]:
        chunks = [c async for c in app.astream({"log": []}, cfg("a"), stream_mode="custom")]
        batch = await app.abatch([{"log": []}, {"log": ["y"]}], [cfg("b1"), cfg("b2")])
        return chunks, batch

    chunks, batch = asyncio.run(go())
    assert chunks == ["hello"] and batch == [{"log": ["x"]}, {"log": ["y", "x"]}]


def test_a_subgraph_is_a_run_of_its_own_that_verifies() -> None:
    child = StateGraph(S)
    child.add_node("c1", lambda s: {"log": ["c1"]})
    child.add_node("c2", lambda s: {"log": ["c2"]})
    child.add_edge(START, "c1")
    child.add_edge("c1", "c2")
    parent = StateGraph(S)
    parent.add_node("sub", child.compile())
    parent.add_edge(START, "sub")
    parent.add_edge("sub", END)
    store = wayline.connect("sqlite:///:memory:")
    app = parent.compile(store)
    assert app.invoke({"log": ["p"]}, cfg("p"))["log"] == ["p", "p", "c1", "c2"]
    runs = {r.run_id: r for r in store.list_runs("default")}
    (child_id,) = [r for r in runs if r.startswith("p::sub:")]
    assert runs[child_id].step == 2 and runs[child_id].status == "done"
    # a name no worker serves: only the parent's task continues a child run
    assert runs[child_id].graph_name == "S::S" and runs["p"].graph_name == "S"
    assert app.verify(cfg("p")).ok
    assert child.compile(store).verify(cfg(child_id)).ok
    assert wayline.Wayline(store).purge("p") > 0  # the child's rows go with the parent's
    assert store.list_runs("default") == []


def test_a_finished_task_is_not_run_again_after_the_entrypoint_fails() -> None:
    from wayline.func import entrypoint, task

    calls: list[str] = []

    @task
    def fetch(x: int) -> int:
        calls.append(f"fetch{x}")
        return x * 10

    fail = {"on": True}

    @entrypoint(checkpointer=wayline.connect("sqlite:///:memory:"))
    def flow(x: int) -> int:
        value: int = fetch(x).result()
        if fail["on"]:
            raise RuntimeError("crash between tasks")
        following: int = fetch(x + 1).result()
        return value + following

    with pytest.raises(RuntimeError):
        flow.invoke(1, cfg("f"))
    fail["on"] = False
    assert flow.invoke(None, cfg("f")) == 30
    assert calls == ["fetch1", "fetch2"]


def test_an_entrypoint_update_is_its_return_value_and_the_next_previous() -> None:
    """As LangGraph: ``update_state`` on an ``@entrypoint`` writes what it returned, so
    the next call gets the update as ``previous`` (on a thread that ran or not)."""
    from wayline.func import entrypoint

    seen: list[Any] = []

    @entrypoint(checkpointer=wayline.connect("sqlite:///:memory:"))
    def turn(inputs: Any, *, previous: Any) -> Any:
        seen.append(previous)
        return {"previous": previous, "current": inputs}

    turn.update_state(cfg("e"), {"a": "-1"})
    assert turn.get_state(cfg("e")).values == {"a": "-1"}
    assert turn.invoke({"a": "1"}, cfg("e")) == {"current": {"a": "1"}, "previous": {"a": "-1"}}
    asyncio.run(turn.aupdate_state(cfg("e"), {"a": "3"}))
    assert turn.invoke({"a": "2"}, cfg("e")) == {"current": {"a": "2"}, "previous": {"a": "3"}}
    assert seen == [{"a": "-1"}, {"a": "3"}]


def test_a_task_of_a_partial_is_named_after_its_function_as_in_langgraph() -> None:
    import functools

    from wayline.func import entrypoint, task

    def tag(label: str, value: str) -> str:
        return f"{value}|{label}"

    tagged = task(functools.partial(tag, "x"))

    @entrypoint()
    def flow(value: str) -> str:
        return str(tagged(value).result())

    assert tagged.name == "tag"
    assert list(flow.stream("v", stream_mode="updates")) == [{"tag": "v|x"}, {"flow": "v|x"}]


def test_callbacks_in_the_config_see_one_root_run_per_invoke() -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    from wayline.types import interrupt

    seen: list[tuple[str, Any]] = []

    class Recorder(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
            if kw.get("parent_run_id") is None:
                seen.append(("start", inputs))

        def on_chain_end(self, outputs: Any, **kw: Any) -> None:
            if kw.get("parent_run_id") is None:
                seen.append(("end", outputs))

    g = StateGraph(S)
    g.add_node("ask", lambda s: {"log": [interrupt("why?")]})
    g.add_edge(START, "ask")
    app = g.compile()
    out = asyncio.run(app.ainvoke({"log": ["in"]}, {"callbacks": [Recorder()]}))
    assert "__interrupt__" in out
    assert seen == [("start", {"log": ["in"]}), ("end", {"log": ["in"]})]


def _count(msg: str, *, previous: Any) -> entrypoint.final[int, list[str]]:  # type: ignore[valid-type]
    seen = previous or []
    return entrypoint.final(value=len(seen), save=[*seen, msg])


def test_entrypoint_final_takes_the_value_and_save_types_and_refuses_generators() -> None:
    from wayline.errors import NotSupportedError

    count = entrypoint(checkpointer=wayline.connect("sqlite:///:memory:"))(_count)
    assert count.get_output_jsonschema() == {"title": "LangGraphOutput", "type": "integer"}
    assert [count.invoke(m, cfg("c")) for m in ("a", "b")] == [0, 1]
    with pytest.raises(TypeError):
        entrypoint.final[int]  # both types or none, as LangGraph's
    with pytest.raises(NotSupportedError) as refused:

        @entrypoint()
        def gen(inputs: Any) -> Any:
            yield inputs

    assert isinstance(refused.value, NotImplementedError)


def test_interrupt_before_at_invoke_and_resume() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    app = g.compile()
    assert app.invoke({"log": []}, cfg("i"), interrupt_before=["b"]) == {"log": ["a"]}
    assert app.get_state(cfg("i")).next == ("b",)
    run = app.store.get_run("default", "i")
    assert run is not None and run.status == "interrupted"
    assert app.invoke(None, cfg("i")) == {"log": ["a", "b"]}


def test_a_command_given_at_a_breakpoint_goes_on_past_it_as_in_langgraph() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    app = g.compile(interrupt_before=["a"])
    assert app.invoke({"log": []}, cfg("u")) == {"log": []}
    assert app.invoke(wayline.Command(update={"log": ["u"]}), cfg("u")) == {"log": ["u", "a", "b"]}
    assert app.invoke({"log": []}, cfg("g")) == {"log": []}
    out = asyncio.run(app.ainvoke(wayline.Command(goto=["b"]), cfg("g")))
    assert out == {"log": ["a", "b", "b"]}  # a (waiting) and b (goto), then b after a


def test_a_chat_history_snapshots_as_segments_and_replays_exactly_after_edits() -> None:
    """MessagesState histories are snapshotted like append logs: each snapshot writes the
    messages added since the last one (bytes stay linear in the history); an edit (here a
    RemoveMessage) makes the next snapshot index the history anew, and reconstruction
    still gives the state that ran."""
    from wayline.graph.channels import MessageLog
    from wayline.instrument import byte_report

    turns = {"n": 0}

    def bot(state: MessagesState) -> dict[str, Any]:
        turns["n"] += 1
        reply = lc.AIMessage("x" * 200 + str(turns["n"]))
        if turns["n"] == 25:  # an edit: forget the first message
            return {"messages": [reply, lc.RemoveMessage(id=state["messages"][0].id)]}
        return {"messages": [reply]}

    g = StateGraph(MessagesState)
    g.add_node("bot", bot)
    g.add_edge(START, "bot")
    store = wayline.connect("sqlite:///:memory:")
    app = g.compile(store, snapshot_every=4)
    assert isinstance(app.new_channels()["messages"], MessageLog)
    for i in range(40):
        app.invoke({"messages": [("user", f"turn {i}")]}, cfg("chat"))
    assert app.verify(cfg("chat")).ok
    history = app.get_state(cfg("chat")).values["messages"]
    assert len(history) == 79 and history[0].type == "ai"  # "turn 0" was removed
    fresh = g.compile(wayline.connect("sqlite:///:memory:"))  # same schema, other store
    assert fresh.new_channels()["messages"].key == "messages"
    tables = byte_report(store, "default", "chat").by_table()
    snapshotted = tables["segments"] + tables["snapshots"]
    whole = len(Codec().dumps(history))
    # 20 snapshots each holding the whole growing history would be ~10x the history
    assert snapshotted < 2.5 * whole, (tables, whole)


def test_custom_chunks_reach_the_caller_while_the_node_runs() -> None:
    """The node waits until the caller has seen its first chunk: a driver that delivered
    chunks only when the node finished would never let it finish (the node gives up
    after 10 s and the test fails)."""
    import threading

    from wayline.config import get_stream_writer

    seen = threading.Event()

    def node(state: S) -> dict[str, Any]:
        get_stream_writer()("started")
        return {"log": ["seen" if seen.wait(timeout=10) else "not seen"]}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    app = g.compile()
    out = []
    for mode, chunk in app.stream({"log": []}, cfg("live"), stream_mode=["custom", "values"]):
        if mode == "custom":
            seen.set()
        out.append(chunk)
    assert out[-1] == {"log": ["seen"]}

    aseen = asyncio.Event()  # binds to the running loop on first use (Python 3.10+)

    async def anode(state: S) -> dict[str, Any]:
        get_stream_writer()("started")
        try:
            await asyncio.wait_for(aseen.wait(), timeout=10)
        except TimeoutError:
            return {"log": ["not seen"]}
        return {"log": ["seen"]}

    g2 = StateGraph(S)
    g2.add_node("anode", anode)
    g2.add_edge(START, "anode")
    app2 = g2.compile()

    async def consume() -> list[Any]:
        chunks = []
        async for mode, chunk in app2.astream(
            {"log": []}, cfg("alive"), stream_mode=["custom", "values"]
        ):
            if mode == "custom":
                aseen.set()
            chunks.append(chunk)
        return chunks

    assert asyncio.run(consume())[-1] == {"log": ["seen"]}
