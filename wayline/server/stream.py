"""Streams of a run, read from the store: the server never runs the graph, so it follows
the thread's committed steps as workers write them.

What nodes emit while they run (``custom``: ``get_stream_writer()`` chunks) is read from
the ``stream_events`` table a worker fills for runs that asked for it
(``wayline.worker.emitted``), each step's ahead of that step's ``updates``, as they were
emitted in process.

A ``RunWatch`` reconstructs the state at the step the run started from, then folds each
new step's delta through the same ``apply_step`` execution used, emitting LangGraph's
events: ``updates`` (each node's writes) and ``values`` (the state after each step). The
stream can be opened again at any time (``GET .../runs/{id}/stream``): it replays from the
run's first step, so a client that dropped off loses nothing.

Waking: the stream reads its run when the run moves. A commit in this process (the
server's own workers) rings its ``Bell`` (``wayline.server.bell``) from the committing
thread; on PostgreSQL, workers elsewhere whose store announces (``?announce=1``) ring it
by NOTIFY. A timer is the fallback for commits nobody announces (another process's on
SQLite, a PostgreSQL worker that does not announce): ``fallback`` seconds between reads
while rings keep coming or nothing happens, and, once a timer read finds steps nobody
announced, a read every 10 ms while steps arrive, backing off to ``fallback`` when idle.
Each read is one indexed read of the run row, and the new deltas only when its step moved.
Without a bell, the stream polls that way from the start.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from wayline.graph.algo import apply_step, values_of
from wayline.graph.checkpoint import BlobCache, decode_results, reconstruct
from wayline.graph.compiled import CompiledGraph
from wayline.graph.types import START, Interrupt
from wayline.server.bell import Bell, Waiter
from wayline.server.chat_events import ChatEvents
from wayline.server.http import call
from wayline.server.jsonable import dumps_jsonable, interrupt_json
from wayline.server.run_events import StepEvents
from wayline.server.sse import PING, PING_EVERY, encode_event
from wayline.server.views import settled
from wayline.store.base import Store
from wayline.store.records import RunProgress
from wayline.store.server_tables import ThreadRunRecord
from wayline.worker.emitted import ATTEMPT, EMITTED_MODES

__all__ = ["RunWatch", "open_watch", "reads_emitted", "recorded_modes", "run_meta", "sse_events"]

Event = tuple[str, Any]
FINISH = "__finish__"
STEP = "__step__"
"""A committed step: (step, [(node, path, writes)], values before, values after)."""
MIN_POLL = 0.01
MAX_POLL = 0.1


def reads_emitted(modes: Any) -> bool:
    """Whether a stream of ``modes`` reads what nodes emitted (beside committed steps)."""
    return bool(recorded_modes(modes))


def recorded_modes(modes: Any) -> set[str]:
    """The modes a worker records for a stream of ``modes``: chat-model tokens for
    ``messages``, ``messages-tuple`` and ``events``; ``custom`` chunks."""
    asked = {"messages" if m in ("messages-tuple", "events") else m for m in modes}
    return asked & EMITTED_MODES


def run_meta(rec: ThreadRunRecord, graph_id: str) -> dict[str, Any]:
    """The run's keys in each chat message's metadata, as ``langgraph dev`` sends them."""
    return {
        "graph_id": graph_id,
        "assistant_id": rec.assistant_id,
        "run_id": rec.run_id,
        "thread_id": rec.thread_id,
    }


class RunWatch:
    def __init__(
        self,
        store: Store,
        graph: CompiledGraph,
        tenant: str,
        thread_id: str,
        start_step: int,
        *,
        show_start: bool,
        end_step: int | None = None,
        emitted: bool = False,
    ) -> None:
        self.store = store
        self.graph = graph
        self.tenant = tenant
        self.thread_id = thread_id
        self.step = start_step
        self.show_start = show_start
        self.channels: dict[str, Any] | None = None
        self.keys = set(graph.schema.channels)
        self.done = False
        self.end_step = end_step
        """A run a later run followed ends at that run's start: its own steps only."""
        self.emitted = emitted
        self.meta: dict[str, Any] = {}
        """The run's keys a chat client finds in each message's metadata (graph, run)."""
        """Whether to read what nodes emitted (``custom``) from the store, beside the steps."""
        self.start_step = start_step
        self.seq = 0
        """The last node-emitted event sent (its number in the run)."""
        self.steps = False
        """Whether to send each committed step whole (``STEP``: for ``debug``, ``events``)."""
        self.attempts = 0
        """Claims that recorded this run's events so far (a new one: a new attempt)."""
        self.starts: Callable[[], int | None] | None = None
        """A queued run's: the step it began after, once its input reached the thread."""
        self.ends: Callable[[], int | None] | None = None
        """The step a run queued behind this one took the thread on from (None: none yet)."""
        self.ended: Callable[[RunProgress], None] | None = None
        """Told the run's row once the run stopped holding the thread (no later run took
        it on), as the stream ends."""
        self._ends_token: int | None = None
        """The run row's fencing token when ``ends`` was last asked."""

    light = True
    """Whether a read after the first reads only the new steps' rows (a subclass that
    rebuilds more each read says False)."""

    def quick(self) -> bool:
        """Whether the next read may be made on the event loop: a read of the steps since
        the last one (the state so far is in hand, or the run began a new thread: nothing
        to reconstruct) from a store whose reads wait for no writer. Measured
        (``bench/server.py``'s load, 8 clients x 40 runs, in-process workers, three
        alternated pairs): the hop to a thread cost the server about 1.2 ms of CPU a run,
        11-14% of its throughput, more than the reads themselves."""
        if not (self.light and self.store.quick_reads):
            return False
        return self.channels is not None or (self.step < 0 and self.starts is None)

    def bounded(self) -> bool:
        """Whether the run has started (a queued one may not have)."""
        if self.starts is not None:
            begun = self.starts()
            if begun is None:
                return False
            self.step = self.start_step = begun
            self.starts = None
        return True

    def run_now(self) -> RunProgress | None:
        """Where the thread's run is (a narrow read of its row), and this run's end set
        once a run queued behind it took the thread on. That needs a claim of the row (a
        queued input is promoted inside a claim, and the later run's steps commit under
        it), so the thread's queue is read again only when the row's fencing token moved
        since the last look: not at every read (it was one more statement on the event
        loop at each, 8% of the loop's samples under ``bench/server.py``'s load)."""
        run = self.store.run_progress(self.tenant, self.thread_id)
        if run is None or self.end_step is not None or self.ends is None:
            return run
        if run.fencing_token != self._ends_token:
            self._ends_token = run.fencing_token
            self.end_step = self.ends()
        return run

    def poll(self) -> list[Event]:
        """Events since the last poll; sets ``done`` once the run has stopped and every
        step it committed was emitted."""
        run = self.run_now()
        if run is None:  # purged while watched
            self.done = True
            return [("error", {"error": "RunNotFoundError", "message": "the thread was deleted"})]
        events: list[Event] = []
        codec = self.graph.codec
        if self.channels is None:
            fresh = self.graph.new_channels()
            if self.step >= 0:
                rec = reconstruct(self.store, codec, fresh, self.tenant, self.thread_id, self.step)
                fresh = rec.channels
            self.channels = fresh
            if self.show_start:
                events.append(("values", values_of(fresh)))
        top = run.step if self.end_step is None else min(run.step, self.end_step)
        if top > self.step:
            resolve = BlobCache(self.store, self.tenant)
            emitted = self._emitted(top)
            for delta in self.store.load_deltas(self.tenant, self.thread_id, self.step, top):
                while emitted and emitted[0][0] <= delta.step:  # emitted while it ran
                    events.append(emitted.pop(0)[1])
                results = decode_results(codec, delta.payload, resolve)
                before = values_of(self.channels) if self.steps else None
                done: list[tuple[str, Any, dict[str, Any]]] = []
                for r in results:
                    writes = {k: v for k, v in r.writes if k in self.keys}
                    done.append((r.name, r.path, writes))
                    if r.name == START or r.name.startswith("__"):
                        continue  # the input step (LangGraph sends no update for it)
                    events.append(("updates", {r.name: writes or None}))
                apply_step(self.channels, results)
                events.append(("values", values_of(self.channels)))
                if self.steps:
                    events.append((STEP, (delta.step, done, before, values_of(self.channels))))
                self.step = delta.step
            events.extend(event for _, event in emitted)  # none left, bar a gap in steps
        if self.end_step is not None and self.step >= self.end_step:
            self.done = True  # a later run took the thread on from here
        elif settled(run) and self.step >= run.step:
            self.done = True
            if self.ended is not None:
                self.ended(run)
            # a step that committed no delta (it paused on an interrupt) may have emitted
            events.extend(event for _, event in self._emitted(run.step + 1))
            events.extend(self._ending(run.status, run.error, run.step))
        elif self.step >= run.step:  # the step running now: its tokens so far
            events.extend(event for _, event in self._emitted(run.step + 1))
        return events

    def _emitted(self, to_step: int) -> list[tuple[int, Event]]:
        """(step, event) of what nodes emitted in this run's steps up to ``to_step`` and was
        not sent yet; one indexed read, only when the run's step moved."""
        if not self.emitted:
            return []
        rows = self.store.load_stream_events(
            self.tenant,
            self.thread_id,
            after_seq=self.seq,
            after_step=self.start_step,
            to_step=to_step,
        )
        if rows:
            self.seq = rows[-1].seq
        codec = self.graph.codec
        out: list[tuple[int, Event]] = []
        for r in rows:
            if r.mode != ATTEMPT:
                if self.attempts:  # before this run's first mark: an earlier run's, in the
                    out.append((r.step, (r.mode, codec.loads(r.payload))))  # step it resumes
                continue
            self.attempts += 1  # a worker's claim began recording here
            if self.attempts > 1:  # another worker took over (the stream opened with 1)
                out.append((r.step, (ATTEMPT, self.attempts)))
        return out

    def _ending(self, status: str, error: str | None, step: int) -> list[Event]:
        if status == "interrupted":
            records = self.store.load_interrupts(self.tenant, self.thread_id, step + 1)
            codec = self.graph.codec
            raised = [
                interrupt_json(
                    Interrupt(
                        codec.loads(i.value), i.interrupt_id, i.approvers, i.expires_at, i.digest
                    ),
                    stream=True,
                )
                for i in records
                if i.resume is None
            ]
            assert self.channels is not None
            if not raised:  # a breakpoint (interrupt_before/after): LangGraph sends just this
                return [("updates", {"__interrupt__": []})]
            return [
                ("updates", {"__interrupt__": raised}),
                ("values", {**values_of(self.channels), "__interrupt__": raised}),
            ]
        if status in ("failed", "parked"):
            kind, _, message = (error or "error: unknown").partition(": ")
            return [("error", {"error": kind, "message": message or kind})]
        return []


def open_watch(store: Store, graph: Any, *args: Any, **kw: Any) -> RunWatch:
    """The watch of a run of ``graph``: its own when it has one (a LangGraph graph follows
    its checkpoints: ``wayline.langgraph.served``), else one over wayline's deltas."""
    own = getattr(graph, "watch", None)
    if callable(own):
        watch: RunWatch = own(store, *args, **kw)
        return watch
    return RunWatch(store, graph, *args, **kw)


async def sse_events(
    watch: RunWatch,
    run_id: str,
    modes: list[str],
    *,
    after: int = 0,
    subgraphs: bool = False,
    bell: Bell | None = None,
    fallback: float = MAX_POLL,
    ping_every: float = PING_EVERY,
) -> AsyncIterator[bytes]:
    """The SSE stream: ``metadata`` first, then the events of the asked modes (and errors).
    LangGraph's server sends no ``end`` event; the stream just closes. ``subgraphs``
    (``stream_subgraphs``): what subgraphs emitted too, each event named with its namespace
    as LangGraph's server names it (``custom|node:task id``, ``messages|...``).

    Events carry ids 1, 2, ... in run order; the order is the same every time the run is
    streamed (it is read back from committed steps), so a client reconnecting with
    ``Last-Event-ID: n`` (the SDK does after a drop or a server restart) gets exactly the
    events after n: ``after``.

    ``bell``: what wakes the stream when its run moves (the module docstring), with a read
    every ``fallback`` seconds for moves nobody announces; None: poll. The stream ends
    early, for its client to reconnect, when the bell closes its streams (the server is
    stopping); a ping goes out after ``ping_every`` seconds without an event.

    Yields the encoded events of each read as one chunk, one write to the client however
    many steps the read found (a send through the response costs the event loop about as
    much as encoding the event)."""
    waiter = bell.subscribe(watch.tenant, watch.thread_id) if bell is not None else None
    quiet_since = time.monotonic()
    try:
        async for batch in _events(watch, run_id, modes, after, subgraphs, waiter, fallback):
            if batch:
                quiet_since = time.monotonic()
                yield "".join(batch).encode()
            elif time.monotonic() - quiet_since >= ping_every:
                quiet_since = time.monotonic()
                yield PING
    finally:
        if waiter is not None:
            waiter.close()


async def _events(
    watch: RunWatch,
    run_id: str,
    modes: list[str],
    after: int,
    subgraphs: bool,
    waiter: Waiter | None,
    fallback: float,
) -> AsyncIterator[list[str]]:
    """Each read's encoded events (an empty list: a read that found none, for pings)."""
    yield [encode_event("metadata", dumps_jsonable({"run_id": run_id, "attempt": 1}))]
    wait = MIN_POLL if waiter is None else fallback
    rung = True  # what the first read finds is the run so far, not a sign of another writer
    seq = 0
    chat = ChatEvents(modes, watch.meta)
    steps = StepEvents(modes, run_id, watch.thread_id, watch.meta)
    watch.steps = steps.debug or steps.events
    while True:
        if waiter is not None:
            if waiter.bell.closing:
                return  # the server is stopping: the client reconnects to where it was
            waiter.clear()  # a move from here on wakes the next wait
        if watch.quick():  # the steps since the last read: a few small rows
            read = _read(watch)
        else:  # the first read (the state so far) or a store whose reads wait
            read = await call(_read, watch)  # one hop to a thread for both reads
        if read is None:  # queued: nothing to send until it starts
            yield []
            if waiter is not None:
                await waiter.wait(wait)
            else:
                await anyio.sleep(wait)
                wait = min(wait * 2, MAX_POLL)
            continue
        events = read
        if watch.done:
            events.append((FINISH, None))
        batch: list[str] = []
        for kind, data in events:
            if kind == ATTEMPT:
                sent: list[Event] = [("metadata", {"run_id": run_id, "attempt": data})]
                chat.attempt = int(data)
                steps.run_meta = {**steps.run_meta, "run_attempt": int(data)}
            elif kind == "messages":
                sent = chat.events(data) + steps.message(*data)
            elif "|" in kind:  # a subgraph's (``wayline.langgraph.emitting``)
                sent = _nested(kind, data, modes, chat) if subgraphs else []
            elif kind == STEP:
                sent = steps.step(data)
            elif kind == FINISH:
                sent = steps.finish()
            elif kind in modes or kind == "error":
                sent = [(kind, data)]
            else:
                continue
            for event, payload in sent:
                seq += 1
                if seq > after:
                    batch.append(encode_event(event, dumps_jsonable(payload), str(seq)))
        yield batch
        if watch.done:
            break
        if waiter is None:
            wait = MIN_POLL if events else min(MAX_POLL, wait * 1.5)
            await anyio.sleep(wait)
            continue
        # a timer read that found steps nobody announced: another process commits, poll fast
        wait = MIN_POLL if events and not rung else min(fallback, wait * 1.5)
        rung = await waiter.wait(wait)


def _read(watch: RunWatch) -> list[Event] | None:
    """The run's events since the last read (None: a queued run, not started yet)."""
    return watch.poll() if watch.bounded() else None


def _nested(kind: str, data: Any, modes: list[str], chat: ChatEvents) -> list[Event]:
    base, _, ns = kind.partition("|")
    if base == "custom":
        return [(kind, data)] if "custom" in modes else []
    if base == "messages":
        return [(f"{event}|{ns}", payload) for event, payload in chat.events(data)]
    return []
