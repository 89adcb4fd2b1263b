"""CompiledGraph: invoke, stream and inspect runs. The sync and async drivers differ only
in how they call nodes; everything else is the shared ``RunLoop``."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import datetime as dt
import inspect
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from wayline.errors import (
    ConfigError,
    EffectOutcomeUnknown,
    GraphInterrupt,
    ReplayDivergenceError,
    RunNotFoundError,
    UnknownNodeError,
    WaylineError,
)
from wayline.graph import travel
from wayline.graph.algo import values_of
from wayline.graph.channels import Barrier, Channel
from wayline.graph.checkpoint import (
    DEFAULT_BLOB_THRESHOLD,
    BlobCache,
    decode_results,
    reconstruct,
    state_digest,
)
from wayline.graph.context import reset_scope, set_scope
from wayline.graph.loop import ExecTask, RunLoop, TaskOutcome, default_owner
from wayline.graph.types import Interrupt, PregelTask, Send, StateSnapshot
from wayline.ids import derive_id
from wayline.store.base import Store
from wayline.store.records import check_durability

if TYPE_CHECKING:
    from wayline.graph.builder import StateGraph

__all__ = ["CompiledGraph", "Verification"]

DEFAULT_STEP_LIMIT = 10_000
"""LangGraph 1.2 defaults ``recursion_limit`` to 10,007; wayline rounds it."""
DEFAULT_TENANT = "default"
STREAM_MODES = ("values", "updates")


@dataclasses.dataclass(frozen=True, slots=True)
class Verification:
    """The result of ``verify``: the committed digest against the reconstructed one."""

    run_id: str
    step: int
    expected: str
    actual: str
    snapshot_step: int | None
    folds: int
    rows_read: int

    @property
    def ok(self) -> bool:
        return self.expected == self.actual


class CompiledGraph:
    """A validated graph bound to a store. Thread-safe: one instance serves many runs."""

    def __init__(
        self,
        *,
        builder: StateGraph,
        store: Store,
        snapshot_every: int,
        name: str,
        version: str,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        verify_sample: float = 0.0,
        max_lag_steps: int = 8,
        max_lag_ms: float = 100.0,
    ) -> None:
        self.builder = builder
        self.store = store
        self.codec = builder.codec
        self.schema = builder.schema
        self.snapshot_every = snapshot_every
        self.blob_threshold = blob_threshold
        self.verify_sample = verify_sample
        self.max_lag_steps = max_lag_steps
        self.max_lag_ms = max_lag_ms
        self.name = name
        self.version = version
        self.schema_version = builder.schema_version
        self.migrations = dict(builder.migrations)
        self.nodes = dict(builder.nodes)
        self.branches = {k: tuple(v) for k, v in builder.branches.items()}
        edges: dict[str, list[str]] = {}
        for src, dst in sorted(builder.edges):
            edges.setdefault(src, []).append(dst)
        self.static_edges = {k: tuple(v) for k, v in edges.items()}
        self.barriers: dict[str, Barrier] = {}
        joins: dict[str, list[str]] = {}
        for srcs, dst in sorted(builder.waiting_edges):
            key = f"__join__:{'+'.join(srcs)}:{dst}"
            self.barriers[key] = Barrier(key, srcs)
            for src in srcs:
                joins.setdefault(src, []).append(key)
        self.joins_from = {k: tuple(v) for k, v in joins.items()}
        self.requires_thread_id = True
        """A graph compiled with a checkpointer needs a thread id to invoke (LangGraph's
        rule); one compiled without (a private in-memory store) starts a fresh run."""
        if not self.codec.is_registered(Send):
            self.codec.register(Send, "wayline.Send")

    @property
    def checkpointer(self) -> Store:
        return self.store

    def with_store(self, store: Store) -> CompiledGraph:
        """The same graph bound to another store (a worker serves graphs on its own)."""
        if store is self.store:
            return self
        bound = copy.copy(self)
        bound.store = store
        return bound

    def new_channels(self) -> dict[str, Channel]:
        channels = self.schema.new_channels()
        channels.update({k: b.fresh() for k, b in self.barriers.items()})
        return channels

    # -- running ----------------------------------------------------------------------

    def invoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        durability: str = "sync",
    ) -> dict[str, Any]:
        """Run until the graph finishes or interrupts; return the state.

        An interrupted run's result carries ``"__interrupt__"``: the pending questions.
        """
        loop = self._loop(config, durability)
        for _ in self.run_loop(loop, input):
            pass
        return _result(loop)

    def stream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] = "values",
        durability: str = "sync",
    ) -> Iterator[Any]:
        modes, single = _modes(stream_mode)
        loop = self._loop(config, durability)
        for mode, chunk in self.run_loop(loop, input):
            if mode in modes:
                yield chunk if single else (mode, chunk)

    async def ainvoke(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        durability: str = "sync",
    ) -> dict[str, Any]:
        loop = self._loop(config, durability)
        async for _ in self._adrive(loop, input):
            pass
        return _result(loop)

    async def astream(
        self,
        input: Any,
        config: Mapping[str, Any] | None = None,
        *,
        stream_mode: str | Sequence[str] = "values",
        durability: str = "sync",
    ) -> AsyncIterator[Any]:
        modes, single = _modes(stream_mode)
        loop = self._loop(config, durability)
        async for mode, chunk in self._adrive(loop, input):
            if mode in modes:
                yield chunk if single else (mode, chunk)

    def _loop(self, config: Mapping[str, Any] | None, durability: str) -> RunLoop:
        config = dict(config or {})
        tenant, run_id = _ids(config, create=not self.requires_thread_id)
        config.setdefault("configurable", {})
        config["configurable"] = {**config["configurable"], "thread_id": run_id}
        check_durability(durability)
        owner, token = default_owner(), None
        fork = travel.open_replay(self, config, tenant, run_id, owner)
        if fork is not None:  # a past checkpoint (or a fork_id): run a fork of it
            run_id, token = fork
            config["configurable"] = {**config["configurable"], "thread_id": run_id}
        return RunLoop(
            self,
            tenant_id=tenant,
            run_id=run_id,
            durability=durability,
            step_limit=int(config.get("recursion_limit", DEFAULT_STEP_LIMIT)),
            config=config,
            owner=owner,
            token=token,
        )

    def run_loop(self, loop: RunLoop, input: Any) -> Iterator[tuple[str, Any]]:
        """Drive ``loop`` to its end, yielding (stream mode, chunk); workers call this."""
        error: BaseException | None = None
        pool: ThreadPoolExecutor | None = None
        try:
            yield from loop.begin(input)
            while (tasks := loop.next_step()) is not None:
                if len(tasks) > 1 and pool is None:
                    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="wayline-node")
                yield from loop.after_step(self._execute(loop, tasks, pool))
            loop.close(None)
            self._sample_verify(loop)
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
            loop.close(error)

    async def _adrive(self, loop: RunLoop, input: Any) -> AsyncIterator[tuple[str, Any]]:
        error: BaseException | None = None
        try:
            for event in loop.begin(input):
                yield event
            while (tasks := loop.next_step()) is not None:
                for event in loop.after_step(await self._aexecute(loop, tasks)):
                    yield event
            loop.close(None)
            self._sample_verify(loop)
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            loop.close(error)

    def _execute(
        self, loop: RunLoop, tasks: list[ExecTask], pool: ThreadPoolExecutor | None
    ) -> list[TaskOutcome]:
        if len(tasks) <= 1 or pool is None:
            outcomes = [_run_task(loop, t) for t in tasks]
            for o in outcomes:
                loop.task_done(o)
            return outcomes
        futures = [pool.submit(contextvars.copy_context().run, _run_task, loop, t) for t in tasks]
        outcomes = []
        for future in as_completed(futures):
            outcome = future.result()
            loop.task_done(outcome)
            outcomes.append(outcome)
        return outcomes

    async def _aexecute(self, loop: RunLoop, tasks: list[ExecTask]) -> list[TaskOutcome]:
        futures = [asyncio.ensure_future(_arun_task(loop, t)) for t in tasks]
        outcomes = []
        for next_done in asyncio.as_completed(futures):
            outcome = await next_done
            loop.task_done(outcome)
            outcomes.append(outcome)
        return outcomes

    # -- inspecting -------------------------------------------------------------------

    def get_state(self, config: Mapping[str, Any]) -> StateSnapshot:
        """The state at the run's last committed step (or at ``configurable.step``)."""
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        cfg = {"configurable": {"thread_id": run_id, "tenant": tenant}}
        if run is None:
            return StateSnapshot({}, (), cfg, {}, None, None, ())
        at = travel.requested_step(config, tenant, run_id)
        at = run.step if at is None else min(at, run.step)
        rec = reconstruct(self.store, self.codec, self.new_channels(), tenant, run_id, at)
        interrupts: list[Interrupt] = []
        tasks = []
        latest = at == run.step
        pending = {}
        records = []
        if latest:
            resolve = BlobCache(self.store, tenant)
            pending = {
                p.task_id: decode_results(self.codec, p.payload, resolve)[0]
                for p in self.store.load_pending(tenant, run_id, at + 1)
            }
            records = self.store.load_interrupts(tenant, run_id, at + 1)
        for spec in rec.next_tasks:
            task_id = derive_id(tenant, run_id, at + 1, *spec.path)
            mine = tuple(
                Interrupt(
                    self.codec.loads(r.value), r.interrupt_id, r.approvers, r.expires_at, r.digest
                )
                for r in records
                if r.task_id == task_id and r.resume is None
            )
            interrupts.extend(mine)
            done = pending.get(task_id)
            result = dict(w for w in done.writes if not w[0].startswith("__")) if done else None
            tasks.append(PregelTask(task_id, spec.name, spec.path, mine, result))
        meta = {
            "step": at,
            "status": run.status if latest else "running",
            "graph": run.graph_name,
            "graph_version": run.graph_version,
            "snapshot_step": rec.snapshot_step,
            "replayed_steps": rec.folds,
            "rows_read": rec.rows_read,
        }
        step_cfg = {"configurable": {**cfg["configurable"], **_at(tenant, run_id, at)}}
        parent = {"configurable": {**cfg["configurable"], **_at(tenant, run_id, at - 1)}}
        updated = dt.datetime.fromtimestamp(run.updated_at, dt.UTC).isoformat()
        return StateSnapshot(
            values=values_of(rec.channels),
            # as LangGraph: a task whose writes are pending (it finished) will not run again
            next=tuple(t.name for t in tasks if t.result is None),
            config=step_cfg,
            metadata=meta,
            created_at=updated if latest else None,
            parent_config=parent if at > 0 else None,
            tasks=tuple(tasks),
            interrupts=tuple(interrupts),
        )

    def get_state_history(
        self, config: Mapping[str, Any], *, limit: int | None = None
    ) -> Iterator[StateSnapshot]:
        """Snapshots from the newest committed step back to the input step."""
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            return
        base = {**config.get("configurable", {}), "thread_id": run_id, "tenant": tenant}
        for n, step in enumerate(range(run.step, -1, -1)):
            if limit is not None and n >= limit:
                return
            yield self.get_state({"configurable": {**base, "step": step}})

    def update_state(
        self,
        config: Mapping[str, Any],
        values: Any,
        as_node: str | None = None,
    ) -> dict[str, Any]:
        """Write ``values`` into a run's state as a step of its own (a person correcting a
        paused run, say), folded through the reducers like any node's writes. With
        ``as_node`` the run continues as if that node had just written them. Returns the
        config of the new step."""
        tenant, run_id = _ids(config, create=False)
        if self.store.get_run(tenant, run_id) is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r}: invoke it first")
        if as_node is not None and as_node not in self.nodes:  # refused before any write
            raise UnknownNodeError(
                f"update_state(as_node={as_node!r}): nodes are {sorted(self.nodes)}"
            )
        self.schema.check_keys(self.schema.input_to_dict(values), "update_state")
        loop = self._loop(config, "sync")
        error: BaseException | None = None
        try:
            for _ in loop.begin(None):
                pass
            loop.update(values, as_node)
        except BaseException as exc:
            error = exc
            raise
        finally:
            loop.close(error)
        at = _at(tenant, loop.run_id, loop.step)  # a past checkpoint's edit went to a fork
        return {"configurable": {"thread_id": loop.run_id, "tenant": tenant, **at}}

    def verify(self, config: Mapping[str, Any]) -> Verification:
        """Reconstruct a finished run from the store and compare it with the digest its
        final commit recorded."""
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant!r}")
        if run.state_digest is None:
            raise WaylineError(
                f"run {run_id!r} is {run.status} and has no recorded final digest yet; "
                "verify it once it has finished"
            )
        rec = reconstruct(self.store, self.codec, self.new_channels(), tenant, run_id, run.step)
        actual = state_digest(self.codec, rec.channels)
        return Verification(
            run_id, run.step, run.state_digest, actual, rec.snapshot_step, rec.folds, rec.rows_read
        )

    def _sample_verify(self, loop: RunLoop) -> None:
        """Verify a deterministic sample of finished runs (``compile(verify_sample=...)``)."""
        if not loop.finished or self.verify_sample <= 0:
            return
        if int(derive_id(loop.tenant_id, loop.run_id)[:8], 16) >= self.verify_sample * 2**32:
            return
        result = self.verify({"configurable": {"thread_id": loop.run_id, "tenant": loop.tenant_id}})
        if not result.ok:
            raise ReplayDivergenceError(
                f"run {loop.run_id!r} reconstructs to state digest {result.actual[:16]} but "
                f"committed {result.expected[:16]}: a node may mutate its input state in place "
                "or a reducer may not be a pure function; the run's rows are intact"
            )

    def state_digest(self, config: Mapping[str, Any]) -> str:
        """Digest of the reconstructed current state, comparable with the committed one."""
        tenant, run_id = _ids(config, create=False)
        run = self.store.get_run(tenant, run_id)
        if run is None:
            raise WaylineError(f"no run {run_id!r} for tenant {tenant!r}")
        rec = reconstruct(self.store, self.codec, self.new_channels(), tenant, run_id, run.step)
        return state_digest(self.codec, rec.channels)


def _run_task(loop: RunLoop, task: ExecTask) -> TaskOutcome:
    attempt = 0
    while True:
        attempt += 1
        token = set_scope(task.scope)
        try:
            fn, args = loop.node_call(task)
            output = fn(*args)
            if inspect.isawaitable(output):
                output = asyncio.run(_await(output))
            return loop.outcome(task, output)
        except (GraphInterrupt, EffectOutcomeUnknown) as exc:
            return loop.failed(task, exc)
        except Exception as exc:
            delay = loop.retry_delay(task, exc, attempt)
            if delay is None:
                return loop.failed(task, exc)
        finally:
            reset_scope(token)
        time.sleep(delay)


async def _arun_task(loop: RunLoop, task: ExecTask) -> TaskOutcome:
    attempt = 0
    while True:
        attempt += 1
        token = set_scope(task.scope)
        try:
            fn, args = loop.node_call(task)
            if loop.graph.nodes[task.spec.name].is_async:
                output = await fn(*args)
            else:
                output = await asyncio.to_thread(fn, *args)
            return loop.outcome(task, output)
        except (GraphInterrupt, EffectOutcomeUnknown) as exc:
            return loop.failed(task, exc)
        except Exception as exc:
            delay = loop.retry_delay(task, exc, attempt)
            if delay is None:
                return loop.failed(task, exc)
        finally:
            reset_scope(token)
        await asyncio.sleep(delay)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _result(loop: RunLoop) -> dict[str, Any]:
    out = loop.values()
    if loop.raised:
        out["__interrupt__"] = list(loop.raised)
    return out


def _at(tenant: str, run_id: str, step: int) -> dict[str, Any]:
    """A step's address in a config: wayline's ``step`` and LangGraph's ``checkpoint_id``."""
    return {"step": step, "checkpoint_id": travel.checkpoint_id(tenant, run_id, step)}


def _modes(stream_mode: str | Sequence[str]) -> tuple[set[str], bool]:
    single = isinstance(stream_mode, str)
    modes = {stream_mode} if isinstance(stream_mode, str) else set(stream_mode)
    unknown = modes - set(STREAM_MODES)
    if unknown:
        raise WaylineError(
            f"unsupported stream_mode {sorted(unknown)}; supported: {list(STREAM_MODES)}"
        )
    return modes, single


def _ids(config: Mapping[str, Any] | None, *, create: bool) -> tuple[str, str]:
    """(tenant, run id) from a LangGraph-style config. A missing thread id is an error (as
    in LangGraph) unless ``create``: a run of a graph without a checkpointer of its own.
    Any value but None and "" is an id: thread 0 is the run "0"."""
    conf = (config or {}).get("configurable", {}) or {}
    tenant = str(conf.get("tenant", DEFAULT_TENANT))
    run_id = conf.get("thread_id", conf.get("run_id"))
    if run_id is None or run_id == "":
        if run_id == "" or not create:
            raise ConfigError(
                f"config needs {{'configurable': {{'thread_id': ...}}}} to find or start a run "
                f"(got {run_id!r}): a thread id names the run, so each invoke would otherwise "
                "start a new one"
            )
        run_id = uuid.uuid4().hex
    return tenant, str(run_id)
