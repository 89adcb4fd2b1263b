"""wayline's effect ledger inside a LlamaIndex step: ``effect(ctx, name, fn, request=...)``
and ``record(ctx, name, fn)``, for workflows run by ``WaylineRuntime``.

The same ledger as ``ctx.effect`` in a wayline node (``wayline.effects.ledger``): the intent
is durable before ``fn(key)`` runs and the outcome before the step goes on; a step that
runs again (a LlamaIndex retry, or a resume after its process died mid-step) gets the
recorded result and ``fn`` is not called; an outcome a dead process left unknown is
reconciled (``reconcile``), resent under the same key (``idempotent=True``), or the run
parks (``RunParkedError``) until an operator resolves it. Every record is fenced by the
run's token: a worker that lost its lease cannot write one.

The key is derived from (run incarnation, run, step name, LlamaIndex's work item id, name,
seq). The work item id is LlamaIndex's deterministic identity of one routed event; it is
kept across retries and across the rewind a resume does, so the key is too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from workflows.context.context import Context
from workflows.runtime.types.results import StepWorkerStateContextVar

from wayline.codec import default_codec
from wayline.effects.ledger import EffectLedger
from wayline.effects.retry import RetryPolicy
from wayline.errors import EffectOutcomeUnknown, RunParkedError, WaylineError
from wayline.ids import derive_id

__all__ = ["effect", "record"]

_ledgers: OrderedDict[int, tuple[Any, EffectLedger]] = OrderedDict()
_lock = threading.Lock()
_MAX_LEDGERS = 4096


def effect(
    ctx: Context,
    name: str,
    fn: Callable[[str], Any],
    *,
    request: Any = None,
    key: str | None = None,
    reconcile: Callable[[str], Any] | None = None,
    idempotent: bool = False,
    retry: RetryPolicy | None = None,
) -> Any:
    """Run a side effect once per intent; ``fn`` receives the idempotency key (send it to
    the provider). ``request``: what the effect asks for (a different request under the
    same key is refused as a new intent)."""
    ledger, binding = _ledger(ctx)
    try:
        return ledger.effect(
            name,
            fn,
            request=request,
            key=key,
            reconcile=reconcile,
            idempotent=idempotent,
            retry=retry,
        )
    except EffectOutcomeUnknown as unknown:
        binding.parked = unknown.key
        raise RunParkedError(ledger.run_id, unknown.key) from None


def record(ctx: Context, name: str, fn: Callable[[], Any]) -> Any:
    """Call ``fn`` once (a model call, the clock, a random draw); a step that runs again
    gets the recorded value back."""
    return _ledger(ctx)[0].record(name, fn)


def _ledger(ctx: Context) -> tuple[EffectLedger, Any]:
    from wayline.llamaindex.runtime import WaylineInternalAdapter

    adapter = getattr(getattr(ctx, "_face", None), "_internal_adapter", None)
    if not isinstance(adapter, WaylineInternalAdapter):
        raise WaylineError(
            "wayline.llamaindex.effect() runs inside a step of a workflow run by "
            "WaylineRuntime (await runtime.run(workflow, run_id, ...)): its ledger lives "
            "in the runtime's store"
        )
    try:
        step_ctx = StepWorkerStateContextVar.get()
    except LookupError:
        raise WaylineError("wayline.llamaindex.effect() must be called inside a step") from None
    binding = adapter.binding
    with _lock:  # one ledger per step execution: its seq counters restart with a retry
        found = _ledgers.get(id(step_ctx))
        if found is not None and found[0] is step_ctx:
            return found[1], binding
    state = step_ctx.state
    ledger = EffectLedger(
        binding.store,
        default_codec,
        tenant_id=binding.tenant,
        run_id=binding.run_id,
        token=binding.token,
        node=state.step_name,
        step=binding.journal.seq,
        task_id=derive_id(binding.run_id, state.step_name, state.work_item_id or ""),
        incarnation=binding.incarnation,
    )
    with _lock:
        _ledgers[id(step_ctx)] = (step_ctx, ledger)
        while len(_ledgers) > _MAX_LEDGERS:
            _ledgers.popitem(last=False)
    return ledger, binding
