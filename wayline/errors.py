"""Typed errors. Each class's docstring says what happened; each message says what to do.

    WaylineError
    ├── GraphError (ValueError)     the graph definition is invalid (raised by compile)
    │   ├── DuplicateNodeError
    │   ├── UnknownNodeError
    │   ├── NoPathToEndError
    │   ├── EmptySequenceError (ValueError)  add_sequence got no nodes
    │   ├── NotSupportedError (NotImplementedError)  a LangGraph form wayline does not offer
    │   └── InvalidCheckpointerError (TypeError)  compile got something that is not a store
    ├── InvalidUpdateError          a node wrote something the state does not declare
    ├── ReducerError                a reducer raised while folding writes
    ├── NodeTimeoutError            a node attempt ran past its TimeoutPolicy
    ├── NodeCancelledError          a node raised asyncio.CancelledError itself
    ├── CodecError                  a value cannot be encoded or decoded
    ├── GraphDrained                a RunControl asked the run to stop between steps
    ├── StepLimitError              the run took more supersteps than its limit
    │   └── GraphRecursionError     (LangGraph's name; also a RecursionError)
    ├── ReplayDivergenceError       reconstruction does not give the state that ran
    ├── ConfigError (ValueError)    a config, mode or thread id is missing or invalid
    ├── StoreError                  the store failed or was asked for something it lacks
    │   ├── StoreURLError
    │   │   └── StoreNotFoundError  no wayline store at the URL (and the caller only reads)
    │   ├── SchemaError             the database's schema is not one this wayline can use
    │   │   ├── NewerSchemaError    written by a newer wayline
    │   │   └── ForeignDatabaseError  tables that are not wayline's
    │   ├── StoreFullError          the disk (or the database's size limit) is full
    │   ├── TenantMismatchError     a call names a tenant its client or actor is not pinned to
    │   ├── RunNotFoundError
    │   │   └── AmbiguousRunIdError  a run id prefix names several runs
    │   ├── RunExistsError          a commit was to create a run another process created first
    │   ├── LeaseConflictError
    │   ├── CorruptionError         a stored row fails its integrity check
    │   └── KeysRequiredError       an encrypted store opened without keys
    ├── GraphLoadError              a graph named on the command line cannot be loaded
    ├── VersionMismatchError        the run was written by code this graph no longer matches
    │   └── GraphMismatchError      same name and version, another shape (fingerprint)
    ├── ResumeError (RuntimeError)  a resume does not fit the run's current state
    │   ├── ApprovalRefused         the actor, digest or expiry does not allow the decision
    │   └── RedactedRunError        the run had a class of its data erased
    ├── ScopeError                  the client's scope does not allow the call (read, execute)
    ├── TimeTravelError             a checkpoint or fork asked for does not fit the run
    ├── EffectError                 a side effect could not be completed as asked
    │   ├── EffectIntentMismatch    same idempotency key, different request
    │   ├── EffectFailed            the effect failed for good (retries exhausted)
    │   ├── EffectDeclined          raised by an effect's function: it definitely did not happen
    │   ├── EffectRecordChanged     another writer changed an effect record a task held
    │   ├── EffectReplayRefused     a replay or fork would perform an effect it may not
    │   └── RunParkedError          an effect's outcome is unknown; an operator must decide
    └── AuthError                   an API key is missing, unknown, revoked or lacks a scope

    WaylineSignal (BaseException)   control flow a node must not swallow
    ├── GraphBubbleUp               (LangGraph's name for the two below)
    │   ├── GraphInterrupt
    │   └── ParentCommand           Command(graph=Command.PARENT) leaving a subgraph
    ├── EffectOutcomeUnknown        (raised in a node; invoke turns it into RunParkedError)
    └── LeaseLost

Signals derive from ``BaseException`` so that a broad ``except Exception`` inside a node
cannot eat an interrupt or hide that this worker no longer owns the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

__all__ = [
    "AmbiguousRunIdError",
    "ApprovalRefused",
    "AuthError",
    "CodecError",
    "ConfigError",
    "CorruptionError",
    "DuplicateNodeError",
    "EffectDeclined",
    "EffectError",
    "EffectFailed",
    "EffectIntentMismatch",
    "EffectOutcomeUnknown",
    "EffectRecordChanged",
    "EffectReplayRefused",
    "EmptySequenceError",
    "ForeignDatabaseError",
    "GraphBubbleUp",
    "GraphDrained",
    "GraphError",
    "GraphInterrupt",
    "GraphLoadError",
    "GraphMismatchError",
    "GraphRecursionError",
    "InvalidCheckpointerError",
    "InvalidUpdateError",
    "KeysRequiredError",
    "LeaseConflictError",
    "LeaseLost",
    "NewerSchemaError",
    "NoPathToEndError",
    "NodeCancelledError",
    "NodeTimeoutError",
    "NotSupportedError",
    "ParentCommand",
    "RedactedRunError",
    "ReducerError",
    "ReplayDivergenceError",
    "ResumeError",
    "RunExistsError",
    "RunNotFoundError",
    "RunParkedError",
    "SchemaError",
    "ScopeError",
    "StepLimitError",
    "StoreError",
    "StoreFullError",
    "StoreNotFoundError",
    "StoreURLError",
    "TenantMismatchError",
    "TimeTravelError",
    "UnknownNodeError",
    "VersionMismatchError",
    "WaylineError",
    "WaylineSignal",
]


class WaylineError(Exception):
    """Root of every error wayline raises on purpose."""


class GraphError(WaylineError, ValueError):
    """The graph definition is invalid; nothing ran (a ``ValueError`` too, as LangGraph
    raises for these)."""


class DuplicateNodeError(GraphError, ValueError):
    """Two nodes were given the same name."""


class UnknownNodeError(GraphError):
    """An edge, route or Send names a node the graph does not have."""


class NoPathToEndError(GraphError):
    """Some node reachable from START can never reach END."""


class EmptySequenceError(GraphError, ValueError):
    """``add_sequence`` was given no nodes to chain."""


class NotSupportedError(GraphError, NotImplementedError):
    """A LangGraph form that wayline (like LangGraph, or unlike it) does not offer."""


class InvalidCheckpointerError(GraphError, TypeError):
    """``compile(checkpointer=...)`` got something that is not a wayline store."""


class InvalidUpdateError(WaylineError):
    """A node returned an update the state schema does not allow."""


class GraphDrained(WaylineError):
    """``RunControl.request_drain`` stopped the run between steps; its steps are committed
    and ``invoke(None, config)`` continues it. ``reason`` is the one the drain gave."""

    def __init__(self, message: str = "", reason: str = "shutdown") -> None:
        super().__init__(message or f"Graph drained: {reason}")
        self.reason = reason


@dataclasses.dataclass(frozen=True, slots=True)
class NodeError:
    """What a node's error handler is given (a parameter annotated ``NodeError``, or
    named ``error``): the node that failed and its exception. Not an exception itself,
    so not in ``__all__`` (every name there is an error rooted in ``WaylineError``); it
    lives here because LangGraph's programs import it from ``langgraph.errors``."""

    node: str
    error: BaseException


class ReducerError(WaylineError):
    """A channel's reducer raised while folding a write; the step was not committed."""

    def __init__(self, channel: str, cause: BaseException) -> None:
        self.channel = channel
        super().__init__(
            f"reducer of channel {channel!r} raised {type(cause).__name__}: {cause}. "
            "The step was not committed; fix the reducer or the value written and resume."
        )


class CodecError(WaylineError):
    """A value cannot be encoded, or stored bytes cannot be decoded."""


class NodeCancelledError(WaylineError):
    """A node's own code raised ``asyncio.CancelledError`` (nothing cancelled it): a failure
    of the node like any exception, not the silent end of a cancelled task, so the run
    fails (or retries) instead of finishing without the node's writes (LangGraph's)."""

    def __init__(self, node: str) -> None:
        self.node = node
        super().__init__(
            f"node {node!r} raised asyncio.CancelledError itself: raise an ordinary exception "
            "to fail it, or let the caller cancel the run"
        )


class NodeTimeoutError(WaylineError):
    """A node attempt ran past its ``TimeoutPolicy`` (``add_node(..., timeout=...)``): its
    idle timeout without progress, or its run timeout. An ordinary node failure: the node's
    retry policy sees it (a plain ``Exception``, not the built-in ``TimeoutError``, so the
    default ``retry_on`` retries it), then its error handler, then the run fails. What the
    attempt had done durably (effects) stays recorded: a retry reuses the same effect keys.
    The fields are LangGraph's (``langgraph.errors.NodeTimeoutError``)."""

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: str,
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        if kind == "idle":
            if idle_timeout is None:
                raise ValueError("idle_timeout is required when kind='idle'")
            self.timeout = idle_timeout
            message = (
                f"Node '{node}' exceeded its idle timeout of {idle_timeout:.3f}s without "
                f"making progress (elapsed: {elapsed:.3f}s)."
            )
        elif kind == "run":
            if run_timeout is None:
                raise ValueError("run_timeout is required when kind='run'")
            self.timeout = run_timeout
            message = (
                f"Node '{node}' exceeded its run timeout of {run_timeout:.3f}s "
                f"(elapsed: {elapsed:.3f}s)."
            )
        else:
            raise ValueError("kind must be 'idle' or 'run'")
        super().__init__(
            message + " Raise the node's TimeoutPolicy, call runtime.heartbeat() while it "
            "works, or give it a RetryPolicy with retry_on=NodeTimeoutError."
        )
        self.node, self.elapsed, self.kind = node, elapsed, kind
        self.idle_timeout, self.run_timeout = idle_timeout, run_timeout


class StepLimitError(WaylineError):
    """The run reached its superstep limit; its committed steps are kept."""


class ReplayDivergenceError(WaylineError):
    """Reconstructing a finished run from the store gave a different state digest than the
    one recorded when it committed: a resume of such a run would not continue what ran.

    Usual causes: a node mutated its input state in place, or a reducer is not a function
    of its arguments. The run's rows are intact; ``verify`` reports both digests.
    """


class GraphRecursionError(StepLimitError, RecursionError):
    """LangGraph's name for the superstep limit (``config["recursion_limit"]``), raised at
    run time as LangGraph raises it, so ported ``except`` clauses keep working."""


class StoreError(WaylineError):
    """The store failed, or holds nothing for what was asked."""


class StoreURLError(StoreError):
    """A store URL could not be parsed or opened."""


class StoreNotFoundError(StoreURLError):
    """Nothing at this URL holds a wayline store, and the caller only reads (a read never
    creates a database: a typo in a path must not leave an empty store behind)."""


class SchemaError(StoreError):
    """The database's schema is not one this wayline can use as it is. Nothing was written
    to it: the message says whether to upgrade the schema, wayline, or the URL."""


class NewerSchemaError(SchemaError):
    """The database was written by a newer wayline (its schema version is above the newest
    migration this wayline knows). Refused without writing: upgrade wayline."""


class ForeignDatabaseError(SchemaError):
    """The database (or PostgreSQL schema) holds tables that are not wayline's and no
    wayline schema version: it belongs to something else, and wayline will not add to it."""


class StoreFullError(StoreError):
    """The database could not grow: the disk (or the database's size limit) is full. The
    write in flight was rolled back; everything committed before it is intact."""


class TenantMismatchError(StoreError):
    """A call named a tenant that its client is not pinned to, or an actor of one tenant
    acted on another tenant's run. Refused before anything was read or written."""


class RunNotFoundError(StoreError):
    """No run with this id exists for this tenant."""


class AmbiguousRunIdError(RunNotFoundError):
    """A prefix given for a run id starts the ids of several runs of the tenant, so it names
    none of them. The message lists them."""


class RunExistsError(StoreError):
    """A commit that was to create its run found the run there already (another process
    started the same thread first). Nothing was written; the caller reads the run and
    continues it instead (``invoke`` does so by itself)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id!r} exists already (another process started it first); nothing was "
            "written: read it and continue it instead of creating it"
        )


class LeaseConflictError(StoreError):
    """Another live worker holds the run's lease."""


class CorruptionError(StoreError):
    """A stored row does not match its checksum, cannot be decoded, or is missing from a
    sequence that must be whole (a step's delta, a segment, a blob). Nothing was folded
    from it and nothing was written: restore the row (from a backup) and resume.
    """

    def __init__(
        self,
        message: str,
        *,
        table: str = "",
        tenant_id: str | None = None,
        run_id: str | None = None,
        step: int | None = None,
    ) -> None:
        super().__init__(message)
        self.table = table
        self.tenant_id = tenant_id
        self.run_id = run_id
        self.step = step

    @classmethod
    def of(cls, ident: Sequence[Any], why: str) -> CorruptionError:
        """From a row identity as ``wayline.store.payloads`` writes it: (table, tenant,
        run or key, step, ...)."""
        table, tenant = str(ident[0]), str(ident[1])
        rest = list(ident[2:])
        run_id = str(rest[0]) if rest and table not in ("blobs", "effects") else None
        step = rest[1] if len(rest) > 1 and isinstance(rest[1], int) else None
        where = f"{table} row" + (f" of run {run_id!r}" if run_id else f" {rest[0]!r}")
        if step is not None:
            where += f" at step {step}"
        return cls(
            f"{where} (tenant {tenant!r}) is corrupt: {why}. Nothing was read from it or "
            "written over it; restore the row from a backup and resume the run, or purge it",
            table=table,
            tenant_id=tenant,
            run_id=run_id,
            step=step,
        )


class KeysRequiredError(StoreError):
    """The store is encrypted and was opened without keys; nothing was read or written."""


class ConfigError(WaylineError, ValueError):
    """A config value is missing or invalid (a thread id, a durability mode); nothing ran.
    Also a ``ValueError``, as LangGraph raises for the same mistakes."""


class GraphLoadError(WaylineError):
    """A graph named as ``module:attribute`` or ``file.py:attribute`` could not be loaded:
    the file or module is missing, importing it raised, or the attribute is not a graph (or
    a function of no arguments returning one)."""


class VersionMismatchError(WaylineError):
    """A run cannot continue on this graph: another version wrote it, or the graph lacks a
    node the run is about to enter or a key its state holds. Nothing was changed: register
    the run's version beside this one, or carry the run forward with a migration."""


class GraphMismatchError(VersionMismatchError):
    """The run was started by a graph of the same name and version but another shape (its
    nodes, edges, channels or reducers differ: ``wayline.graph.identity``). Nothing was
    changed: run it on the graph that started it, or give the new graph a version of its own
    and carry the run forward with a migration."""


class ResumeError(WaylineError, RuntimeError):
    """A resume value or command does not match the run's pending interrupts (a
    ``RuntimeError`` too, as LangGraph raises for these)."""


class TimeTravelError(WaylineError):
    """A checkpoint or fork asked for does not fit the run: a step it has not reached, a
    checkpoint id of another run, a fork id already taken, an unknown effect mode."""


class RedactedRunError(ResumeError):
    """The run had a class of its data erased (redacted): it holds ``Redacted`` tombstones
    where values were, and its graph has not declared it can continue without them."""


class ScopeError(WaylineError):
    """The client (or API key) has a scope that does not allow this call: ``read`` may read
    state, history and exports; ``execute`` may also start, resume and approve; ``admin``
    may also purge, erase and apply policies."""


class ApprovalRefused(ResumeError):
    """A decision on an approval was refused; it was audited and changed nothing else.

    ``reason`` is one of ``unauthorized``, ``stale_digest``, ``expired``, ``wrong_tenant``,
    ``not_waiting`` (the run waits for no decision: one was accepted already),
    ``already_answered``, ``unknown_interrupt`` (no such open question, or several and none
    named).
    """

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"decision refused ({reason}): {message}")


class EffectError(WaylineError):
    """A side effect could not be completed as asked."""


class EffectIntentMismatch(EffectError):
    """An effect was asked again under an existing idempotency key with another request.

    A changed amount is a new intent, not a retry: give it a new key.
    """


class EffectFailed(EffectError):
    """The effect failed and its retry budget is spent: the run fails with this reason.

    An operator can retry it under the same key (``wayline effects resolve RUN KEY --retry``).
    """

    def __init__(self, key: str, reason: str, run_id: str | None = None) -> None:
        self.key = key
        self.reason = reason
        self.run_id = run_id
        run = run_id or "RUN"
        where = f" in run {run_id!r}" if run_id else ""
        super().__init__(
            f"effect {key!r}{where} failed for good: {reason}. Retry it under the same key "
            f"with `wayline effects resolve {run} {key} --retry`, then resume the run"
        )


class EffectRecordChanged(EffectError):
    """An effect record was not in the status the task expected when it wrote it: another
    writer (an operator's resolution, another run sharing a business key) changed it first.
    The task stops; the run resumes on the record as it now is."""

    def __init__(self, key: str, expect: str | None) -> None:
        self.key = key
        self.expect = expect
        super().__init__(
            f"effect {key!r} was changed by another writer while this task held it "
            f"(expected status {expect}); the task stops here and will see the new record "
            "when the run resumes"
        )


class EffectReplayRefused(EffectError):
    """A replay or fork reached an effect its effect mode does not allow it to perform:
    under ``effects="original"`` one the original run did not perform (with this request),
    under ``effects="sandbox"`` one with no substitute registered. Nothing was sent."""

    def __init__(self, name: str, key: str, mode: str, message: str) -> None:
        self.name = name
        self.key = key
        self.mode = mode
        super().__init__(message)


class RunParkedError(EffectError):
    """The run is parked: an effect's outcome is unknown (its function raised an error that
    does not say whether it happened, or its worker died after dispatching it) and nothing
    makes a resend safe: no ``reconcile``, no ``idempotent=True``, no definite failure."""

    def __init__(self, run_id: str, key: str, reason: str | None = None) -> None:
        self.run_id = run_id
        self.key = key
        self.reason = reason
        why = (
            f"its function raised {reason}, which does not say whether it happened"
            if reason
            else "its worker died after dispatching it"
        )
        super().__init__(
            f"run {run_id!r} is parked: the outcome of effect {key!r} is unknown ({why}). "
            "Check with the provider, then record the outcome: "
            f"`wayline effects resolve {run_id} {key} --succeeded|--failed|--retry`, "
            "and resume the run"
        )


class EffectDeclined(EffectError):
    """Raised by an effect's own function to say the provider definitely did not perform it
    (an HTTP 4xx decline, a validation refusal): a resend is safe, so the effect's retry
    policy applies; without one the effect fails. Any other exception from the function
    leaves the outcome unknown and parks the run, unless the effect is ``idempotent`` or
    its ``reconcile`` finds no record."""


class AuthError(WaylineError):
    """A request to the server had no valid API key, or its key lacks the scope it needs.

    ``status`` is the HTTP status the server answers with (401: who are you; 403: not this).
    """

    def __init__(self, message: str, *, status: int = 401) -> None:
        self.status = status
        super().__init__(message)


class WaylineSignal(BaseException):
    """Control flow that must propagate through user code untouched."""


class GraphBubbleUp(WaylineSignal):
    """LangGraph's base of the signals that leave a node for the graph that runs it
    (``GraphInterrupt``, ``ParentCommand``): a ``ToolNode`` and a node's retry policy let
    it through; raise it to stop a node the way an interrupt does."""


class GraphInterrupt(GraphBubbleUp):
    """Raised by ``interrupt()``: the run suspends until resumed with a decision.
    ``interrupts`` are ``wayline.types.Interrupt`` values (typed loosely here: the errors
    are a base layer and import nothing of the graph)."""

    def __init__(
        self, interrupts: Sequence[Any] = (), indexes: Sequence[int] | None = None
    ) -> None:
        self.interrupts: tuple[Any, ...] = tuple(interrupts)
        self.indexes: list[int] | None = list(indexes) if indexes is not None else None
        """Where a subgraph's node records its child's questions (one index each)."""
        super().__init__(self.interrupts)


class ParentCommand(GraphBubbleUp):
    """Raised when a subgraph's node returns ``Command(graph=Command.PARENT, ...)``: the
    command leaves the subgraph and is applied by the node that runs it in the parent."""

    def __init__(self, command: Any) -> None:
        self.command = command
        super().__init__(command)


class EffectOutcomeUnknown(WaylineSignal):
    """Raised inside a node when it reaches an effect whose outcome is unknown; the run
    parks instead of guessing. Derived from BaseException so no handler in the node eats it."""

    def __init__(self, key: str, reason: str | None = None) -> None:
        self.key = key
        self.reason = reason
        super().__init__(key)


class LeaseLost(WaylineSignal):
    """This worker's fencing token is stale: another worker owns the run now.

    Nothing was written; the current owner continues the run.
    """

    def __init__(self, run_id: str, token: int, detail: Any = None) -> None:
        self.run_id = run_id
        self.token = token
        super().__init__(
            f"lease on run {run_id!r} lost (fencing token {token} is stale); "
            "this worker stopped writing and another worker owns the run now"
            + (f": {detail}" if detail else "")
        )
