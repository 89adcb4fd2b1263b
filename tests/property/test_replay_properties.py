"""Property tests for exact replay and resumption (DESIGN.md section 3).

Hypothesis draws small graphs: a forward DAG over nodes ``n0..n{k-1}`` with fan-out, joins
(``add_edge([a, b], c)``), conditional edges that choose targets (and ``Send``s to a worker
node) from the state, and optionally a bounded loop from one node back to ``n0``
driven by a counter in the state. Nodes write reducer keys of several kinds (list append,
max, keep-last-3, dedupe, an order-sensitive hash chain) and a last-value key each that
only they write. Every node is a pure function of its input, so a run is deterministic.

Properties:

1. stopping a run at any step (``recursion_limit`` -> ``StepLimitError``) and resuming it,
   possibly several times, through a new compiled graph on the same store URL, ends in the
   same state (and state digest, and per-step history) as an uninterrupted run;
2. ``get_state`` at every committed step equals the state streamed live after that step,
   and replays at most ``snapshot_every`` deltas;
3. the durability modes ``sync``, ``async`` and ``exit`` end in identical state and digest.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import os
import tempfile
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wayline
from wayline import END, START, Send, StateGraph
from wayline.errors import StepLimitError

MAX_NODES = 6
MODES = ("sync", "async", "exit")
BIG_LIMIT = 500


# -- reducers -------------------------------------------------------------------------


def keep_last3(old: list[Any], new: list[Any]) -> list[Any]:
    """Order-sensitive and lossy: only the last three items survive."""
    return (list(old) + list(new))[-3:]


def dedupe(old: list[Any], new: list[Any]) -> list[Any]:
    """First occurrence wins: the result depends on the order of the writes."""
    out = list(old)
    for item in new:
        if item not in out:
            out.append(item)
    return out


def chain(old: int, new: int) -> int:
    """A non-commutative, non-associative fold: any reordering changes the result."""
    return (old * 31 + new) % 1_000_003


class S(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]
    hi: Annotated[int, max]
    last3: Annotated[list[Any], keep_last3]
    seen: Annotated[list[Any], dedupe]
    chain: Annotated[int, chain]
    counter: int
    lv0: Any
    lv1: Any
    lv2: Any
    lv3: Any
    lv4: Any
    lv5: Any


REDUCER_KEYS = ("log", "hi", "last3", "seen", "chain")


# -- graph specs ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BranchSpec:
    options: tuple[str, ...]  # forward node names and/or END
    fanout: bool  # may return two targets at once
    sends: int  # up to this many Send("w", ...) per call
    salt: int


@dataclasses.dataclass(frozen=True)
class GraphSpec:
    n: int
    edges: tuple[tuple[int, int], ...]  # i -> j with i < j; -1 means START
    end_edges: tuple[int, ...]  # i -> END
    joins: tuple[tuple[tuple[int, int], int], ...]  # [a, b] -> c with a, b < c
    branches: tuple[tuple[int, BranchSpec], ...]
    writes: tuple[tuple[str, ...], ...]  # reducer keys node i writes
    takes_ctx: tuple[bool, ...]
    salts: tuple[int, ...]
    loop: int | None  # node ``loop_from`` routes back to n0 while counter < loop
    loop_from: int
    snapshot_every: int
    input: dict[str, Any]

    def build(self) -> StateGraph:
        g = StateGraph(S, name="prop")
        for i in range(self.n):
            g.add_node(f"n{i}", _node_fn(self, i))
        if any(b.sends for _, b in self.branches):
            g.add_node("w", _worker)
        for i, j in self.edges:
            g.add_edge(START if i < 0 else f"n{i}", f"n{j}")
        for i in self.end_edges:
            g.add_edge(f"n{i}", END)
        for (a, b), c in self.joins:
            g.add_edge([f"n{a}", f"n{b}"], f"n{c}")
        for i, branch in self.branches:
            g.add_conditional_edges(f"n{i}", _branch_fn(branch), list(branch.options))
        if self.loop is not None:
            limit = self.loop

            def loop_back(state: dict[str, Any]) -> str:
                return "n0" if state.get("counter", 0) < limit else END

            g.add_conditional_edges(f"n{self.loop_from}", loop_back, ["n0", END])
        return g

    def compile(self, store: Any) -> wayline.CompiledGraph:
        return self.build().compile(store, snapshot_every=self.snapshot_every)


def _tag(name: str, state: dict[str, Any], step: int | None) -> str:
    tag = f"{name}.{state.get('counter', 0)}.{len(state.get('log', []))}"
    return tag if step is None else f"{tag}@{step}"


def _node_fn(spec: GraphSpec, i: int) -> Callable[..., dict[str, Any]]:
    name = f"n{i}"
    keys = spec.writes[i]
    salt = spec.salts[i]

    def body(state: dict[str, Any], step: int | None) -> dict[str, Any]:
        counter = state.get("counter", 0)
        size = len(state.get("log", []))
        tag = _tag(name, state, step)
        out: dict[str, Any] = {f"lv{i}": [tag, (size * 7 + salt) % 11]}
        if i == 0:
            out["counter"] = counter + 1
        for key in keys:
            if key == "log":
                out["log"] = [tag]
            elif key == "hi":
                out["hi"] = (counter * 31 + size * 7 + salt) % 97
            elif key == "last3":
                out["last3"] = [tag]
            elif key == "seen":
                out["seen"] = [f"{name}:{(size + salt) % 3}"]
            elif key == "chain":
                out["chain"] = (size + 1) * (i + 1) + salt
        return out

    # wayline reads the signature: a node taking ``ctx`` is given its NodeContext.
    def node_with_ctx(state: dict[str, Any], ctx: wayline.NodeContext) -> dict[str, Any]:
        return body(state, ctx.step)

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return body(state, None)

    return node_with_ctx if spec.takes_ctx[i] else node


def _worker(arg: dict[str, Any]) -> dict[str, Any]:
    tag = f"w<{arg['src']}.{arg['k']}.{arg['size']}>"
    return {
        "log": [tag],
        "chain": arg["k"] * 13 + arg["size"] + 1,
        "seen": [f"w:{arg['src']}:{arg['k'] % 2}"],
        "last3": [tag],
    }


def _branch_fn(branch: BranchSpec) -> Callable[[dict[str, Any]], list[Any]]:
    def route(state: dict[str, Any]) -> list[Any]:
        size = len(state.get("log", []))
        counter = state.get("counter", 0)
        opts = branch.options
        k = (size + counter * 3 + branch.salt) % len(opts)
        out: list[Any] = [opts[k]]
        if branch.fanout and (size + branch.salt) % 2 == 0:
            out.append(opts[(k + 1) % len(opts)])
        n_sends = (size + branch.salt) % (branch.sends + 1)
        src = _tag("b", state, None)
        out.extend(Send("w", {"src": src, "k": s, "size": size}) for s in range(n_sends))
        return out

    return route


@st.composite
def graph_specs(draw: st.DrawFn) -> GraphSpec:
    n = draw(st.integers(2, MAX_NODES))
    edges = {(-1, 0)}
    for j in range(1, n):  # every node has a predecessor, so most of the graph is reachable
        edges.add((draw(st.integers(0, j - 1)), j))
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, n - 2))
        edges.add((i, draw(st.integers(i + 1, n - 1))))
    if n > 2 and draw(st.booleans()):
        edges.add((-1, draw(st.integers(1, n - 1))))  # a second entry point
    end_edges = tuple(sorted(set(draw(st.lists(st.integers(0, n - 1), max_size=2)))))
    joins = set()
    if n >= 3:
        for _ in range(draw(st.integers(0, 2))):
            c = draw(st.integers(2, n - 1))
            a, b = draw(st.lists(st.integers(0, c - 1), min_size=2, max_size=2, unique=True))
            joins.add(((min(a, b), max(a, b)), c))
    branches = []
    for i in range(n - 1):
        if not draw(st.booleans()):
            continue
        targets = [f"n{j}" for j in range(i + 1, n)] + [END]
        options = draw(st.lists(st.sampled_from(targets), min_size=1, max_size=3, unique=True))
        branches.append(
            (
                i,
                BranchSpec(
                    tuple(options),
                    draw(st.booleans()),
                    draw(st.integers(0, 2)),
                    draw(st.integers(0, 9)),
                ),
            )
        )
    writes = tuple(
        tuple(draw(st.lists(st.sampled_from(REDUCER_KEYS), min_size=1, max_size=5, unique=True)))
        for _ in range(n)
    )
    takes_ctx = tuple(draw(st.booleans()) for _ in range(n))
    salts = tuple(draw(st.integers(0, 9)) for _ in range(n))
    loop = draw(st.none() | st.integers(1, 10))
    loop_from = draw(st.integers(0, n - 1))
    input_: dict[str, Any] = {"log": ["in"], "counter": 0}
    if draw(st.booleans()):
        input_["hi"] = draw(st.integers(0, 100))
    if draw(st.booleans()):
        input_["seen"] = ["n0:0", "w:x:1"]
    if draw(st.booleans()):
        input_["lv0"] = "from-input"
    return GraphSpec(
        n=n,
        edges=tuple(sorted(edges)),
        end_edges=end_edges,
        joins=tuple(sorted(joins)),
        branches=tuple(branches),
        writes=writes,
        takes_ctx=takes_ctx,
        salts=salts,
        loop=loop,
        loop_from=loop_from,
        snapshot_every=draw(st.integers(1, 7)),
        input=input_,
    )


# -- helpers --------------------------------------------------------------------------


def cfg(thread: str, limit: int = BIG_LIMIT, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **extra}, "recursion_limit": limit}


def stream_values(app: wayline.CompiledGraph, spec: GraphSpec, thread: str, mode: str) -> list[Any]:
    """The state after each step, input step first, copied as it was streamed."""
    return [
        copy.deepcopy(v)
        for v in app.stream(spec.input, cfg(thread), stream_mode="values", durability=mode)
    ]


def memory_app(spec: GraphSpec) -> wayline.CompiledGraph:
    return spec.compile(wayline.connect("sqlite:///:memory:"))


def history(app: wayline.CompiledGraph, thread: str, last: int) -> list[Any]:
    return [app.get_state(cfg(thread, step=s)).values for s in range(last + 1)]


COMMON = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- property 1: stop anywhere, resume through a new compiled graph ---------------------


@COMMON
@given(spec=graph_specs(), data=st.data())
def test_stopped_and_resumed_run_matches_uninterrupted(
    spec: GraphSpec, data: st.DataObject
) -> None:
    ref_app = memory_app(spec)
    ref = stream_values(ref_app, spec, "r", "sync")
    last = len(ref) - 1
    ref_digest = ref_app.state_digest(cfg("r"))
    ref_app.store.close()
    if last < 2:
        return  # nothing to stop in between

    # Stop after `stops[0]` supersteps, then resume `stops[1]` more, ..., then finish.
    stops = []
    remaining = last
    for _ in range(data.draw(st.integers(1, 3), label="n_stops")):
        if remaining < 2:
            break
        s = data.draw(st.integers(1, remaining - 1), label="stop")
        stops.append(s)
        remaining -= s
    modes = [data.draw(st.sampled_from(MODES), label="mode") for _ in range(len(stops) + 1)]

    with tempfile.TemporaryDirectory() as tmp:
        url = "sqlite:///" + os.path.join(tmp, "runs.db") + "?synchronous=OFF"
        reached = 0
        opened = []
        try:
            for k, (s, mode) in enumerate(zip(stops, modes, strict=False)):
                app = spec.compile(url)  # a new builder, compiled graph and store handle
                opened.append(app)
                with pytest.raises(StepLimitError):
                    app.invoke(spec.input if k == 0 else None, cfg("r", s), durability=mode)
                reached += s
                snap = app.get_state(cfg("r"))
                assert snap.metadata["step"] == reached
                assert snap.values == ref[reached]
            app = spec.compile(url)
            opened.append(app)
            final = app.invoke(None, cfg("r"), durability=modes[-1])
            assert final == ref[-1]
            assert app.get_state(cfg("r")).values == ref[-1]
            assert app.get_state(cfg("r")).metadata["step"] == last
            assert app.state_digest(cfg("r")) == ref_digest
            run = app.store.get_run("default", "r")
            assert run is not None and run.status == "done"
            assert run.state_digest == ref_digest
            assert history(app, "r", last) == ref
        finally:
            for a in opened:
                a.store.close()


# -- property 2: reconstruction equals execution ----------------------------------------


@COMMON
@given(spec=graph_specs(), mode=st.sampled_from(MODES))
def test_reconstruction_equals_streamed_state(spec: GraphSpec, mode: str) -> None:
    app = memory_app(spec)
    try:
        streamed = stream_values(app, spec, "r", mode)
        last = len(streamed) - 1
        assert app.get_state(cfg("r")).metadata["step"] == last
        for s in range(last + 1):
            snap = app.get_state(cfg("r", step=s))
            assert snap.metadata["step"] == s
            assert snap.values == streamed[s], f"step {s}"
            assert snap.read_info is not None
            assert snap.read_info.replayed_steps <= spec.snapshot_every
        run = app.store.get_run("default", "r")
        assert run is not None and run.status == "done"
        assert app.state_digest(cfg("r")) == run.state_digest
    finally:
        app.store.close()


# -- property 3: durability modes agree --------------------------------------------------


@COMMON
@given(spec=graph_specs())
def test_durability_modes_agree(spec: GraphSpec) -> None:
    app = memory_app(spec)
    try:
        finals = {}
        digests = {}
        for mode in MODES:
            finals[mode] = app.invoke(spec.input, cfg(mode), durability=mode)
            digests[mode] = app.state_digest(cfg(mode))
            assert app.get_state(cfg(mode)).values == finals[mode]
            run = app.store.get_run("default", mode)
            assert run is not None and run.status == "done"
            assert run.state_digest == digests[mode]
        assert finals["async"] == finals["sync"]
        assert finals["exit"] == finals["sync"]
        assert len(set(digests.values())) == 1, digests
    finally:
        app.store.close()
