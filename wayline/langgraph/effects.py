"""wayline's effect ledger inside a LangGraph node: ``effect(name, fn, ...)`` and
``record(name, fn)``, for graphs compiled with ``checkpointer=WaylineSaver(...)``.

The same ledger as ``ctx.effect`` (``wayline.effects.ledger``): the intent is durable
before ``fn(key)`` runs, the outcome before the node goes on; a re-executed node gets the
recorded result; an outcome left unknown by a dead process is reconciled (``reconcile``),
resent under the same key (``idempotent=True``), or the thread parks (``RunParkedError``)
until an operator resolves it (``wayline effects resolve THREAD KEY ...``).

The key is derived from (thread, checkpoint namespace, LangGraph task id, name, seq).
LangGraph derives a task id from the checkpoint its step started from, so the key is
stable across a kill and a resume only if that checkpoint was durable before the node ran:
``effect`` checks that it is (waiting briefly under durability ``async``) and refuses to
run under ``exit``, where a resume re-runs the steps under new checkpoint ids, unless the
caller gives a business key (``key=``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from wayline.codec import default_codec
from wayline.effects.ledger import EffectLedger
from wayline.effects.retry import RetryPolicy
from wayline.errors import EffectOutcomeUnknown, RunParkedError, WaylineError
from wayline.ids import derive_id
from wayline.langgraph.saver import WaylineSaver

__all__ = ["effect", "record"]

CHECKPOINT_WAIT_S = 10.0
"""How long ``effect`` waits for the checkpoint its step started from to become durable
(durability ``async`` writes it in the background while the step runs)."""
_POLL_S = 0.005
_NS_SEP = "|"

_ledgers: OrderedDict[int, tuple[Any, EffectLedger]] = OrderedDict()
_lock = threading.Lock()
_MAX_LEDGERS = 4096


def effect(
    name: str,
    fn: Callable[[str], Any],
    *,
    request: Any = None,
    key: str | None = None,
    reconcile: Callable[[str], Any] | None = None,
    idempotent: bool = False,
    retry: RetryPolicy | None = None,
    config: RunnableConfig | None = None,
) -> Any:
    """Run a side effect once per task execution's intent; ``fn`` receives the idempotency
    key (send it to the provider). ``request``: what the effect asks for (a different
    request under the same key is refused as a new intent)."""
    ledger = _ledger(config or get_config(), need_stable_key=key is None)
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
        raise RunParkedError(ledger.run_id, unknown.key, unknown.reason) from None


def record(name: str, fn: Callable[[], Any], *, config: RunnableConfig | None = None) -> Any:
    """Call ``fn`` once (a model call, the clock, a random draw); a re-executed node gets
    the recorded value back."""
    return _ledger(config or get_config(), need_stable_key=True).record(name, fn)


def _ledger(config: RunnableConfig, *, need_stable_key: bool) -> EffectLedger:
    conf = config.get("configurable") or {}
    saver = conf.get("__pregel_checkpointer")
    if not isinstance(saver, WaylineSaver):
        raise WaylineError(
            "wayline.langgraph.effect() runs inside a node of a graph compiled with "
            "checkpointer=WaylineSaver(...): its ledger lives in the saver's store"
        )
    task_id = conf.get("__pregel_task_id")
    scratchpad = conf.get("__pregel_scratchpad")
    if task_id is None or scratchpad is None:
        raise WaylineError("wayline.langgraph.effect() must be called inside a LangGraph node")
    with _lock:  # one ledger per task execution: its seq counters restart with a retry
        found = _ledgers.get(id(scratchpad))
        if found is not None and found[0] is scratchpad:
            _ledgers.move_to_end(id(scratchpad))
            return found[1]
    tenant = str(conf.get("tenant", saver.tenant))
    thread = str(conf["thread_id"])
    ns = str(conf.get("checkpoint_ns", ""))
    if need_stable_key:
        _wait_for_start_checkpoint(saver, tenant, thread, ns, conf.get("checkpoint_map") or {})
    store = saver.store
    run = store.get_run(tenant, thread)
    if run is None:  # the thread's first checkpoint is not written yet (durability exit)
        run = store.create_run(
            tenant, thread, graph_name="langgraph", graph_version="", durability="sync"
        )
    meta = config.get("metadata") or {}
    ledger = EffectLedger(
        store,
        default_codec,
        tenant_id=tenant,
        run_id=thread,
        token=run.fencing_token,
        node=str(meta.get("langgraph_node", ns.split(":")[0])),
        step=int(meta.get("langgraph_step", 0)),
        task_id=derive_id(thread, ns, task_id),
        incarnation=run.incarnation,
    )
    with _lock:
        _ledgers[id(scratchpad)] = (scratchpad, ledger)
        while len(_ledgers) > _MAX_LEDGERS:
            _ledgers.popitem(last=False)
    return ledger


def _wait_for_start_checkpoint(
    saver: WaylineSaver, tenant: str, thread: str, ns: str, checkpoint_map: dict[str, Any]
) -> None:
    """The task id (so the key) is stable only if the checkpoint the step started from is
    durable: wait for it (durability async) or refuse (durability exit)."""
    parent_ns = _NS_SEP.join(ns.split(_NS_SEP)[:-1])
    checkpoint_id = checkpoint_map.get(parent_ns)
    if checkpoint_id is None:
        return
    deadline = time.monotonic() + CHECKPOINT_WAIT_S
    while saver.store.lg_get_checkpoint(tenant, thread, parent_ns, checkpoint_id) is None:
        if time.monotonic() > deadline:
            raise WaylineError(
                f"effect(): checkpoint {checkpoint_id} of thread {thread!r}, where this step "
                "started, is not durable, so a resume would derive another key and could "
                "repeat the effect. Run the graph with durability='sync' (or 'async'), or "
                "give the effect a business key (key=...)"
            )
        time.sleep(_POLL_S)
