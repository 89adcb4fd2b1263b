"""Effects in a replay or fork: the original's outcomes, substitutes, or live again.

A fork (``wayline.graph.travel``; its origin: ``wayline.forks``) runs its tasks with this
ledger instead of the plain one.
Steps keep their numbers in a fork, so the task that runs node N at step s derives, from the
run whose effects it replays (``ForkOrigin.effects_of``), the same task id the original
task had, and from it the same effect and record keys. A business key is the same key.

- ``original``: an effect whose key the original performed with the same request returns
  the recorded outcome (a recorded failure raises ``EffectFailed`` again); anything else
  is refused with ``EffectReplayRefused``. ``fn`` is never called.
- ``sandbox``: every effect calls the substitute registered for its name with an
  ``EffectCall`` (which carries the original's outcome when there is one); no substitute,
  no effect: ``EffectReplayRefused``. Substitute results are not recorded.
- ``live``: the ordinary ledger under the fork's own keys; a business key gets the fork's
  suffix, so the provider sees a new key and the effect happens again.

``ctx.record`` in ``original`` and ``sandbox`` returns the original's recorded value when it
has one (a model's answer is replayed, not asked again); a call the original never made
runs and is recorded under the fork's own key. In ``live`` it runs afresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from wayline.effects.ledger import EffectLedger
from wayline.effects.retry import RetryPolicy
from wayline.errors import EffectFailed, EffectReplayRefused
from wayline.ids import derive_id, incarnation_at
from wayline.store.records import EffectRecord

if TYPE_CHECKING:
    from wayline.forks import ForkOrigin

__all__ = ["EffectCall", "ReplayLedger", "Substitute", "replay_ledger"]


@dataclasses.dataclass(frozen=True, slots=True)
class EffectCall:
    """What a sandbox substitute is called with: one object, so fields can be added."""

    name: str
    key: str
    """The key the original used (what a provider would have seen)."""
    request: Any
    node: str
    step: int
    performed: bool
    """Whether the original performed this effect (and ``original`` holds its result)."""
    original: Any = None


Substitute = Callable[[EffectCall], Any]


class ReplayLedger(EffectLedger):
    """The ledger of a task in a fork: see the module docstring for the three modes."""

    def __init__(
        self,
        base: EffectLedger,
        origin: ForkOrigin,
        origin_task_id: str,
        substitutes: Mapping[str, Substitute],
    ) -> None:
        super().__init__(
            base.store,
            base.codec,
            tenant_id=base.tenant_id,
            run_id=base.run_id,
            token=base.token,
            node=base.node,
            step=base.step,
            task_id=base.task_id,
            incarnation=base.incarnation,
        )
        self.origin = origin
        self.origin_task_id = origin_task_id
        self.substitutes = dict(substitutes)

    def effect(
        self,
        name: str,
        fn: Callable[[str], Any],
        *,
        request: Any = None,
        key: str | None = None,
        reconcile: Callable[[str], Any] | None = None,
        idempotent: bool = False,
        retry: RetryPolicy | None = None,
        classified: str | None = None,
    ) -> Any:
        mode = self.origin.effects
        if mode == "live":
            return super().effect(
                name,
                fn,
                request=request,
                key=None if key is None else f"{key}~{self.run_id}",
                reconcile=reconcile,
                idempotent=idempotent,
                retry=retry,
                classified=classified,
            )
        seq = self._next_seq("effect", name)
        if key is not None:
            key = key + self.origin.key_suffix
        original_key = key or self._original_key("effect", name, seq)
        rec = self.store.get_effect(self.tenant_id, original_key)
        same = rec is not None and rec.kind == "effect"
        same = same and rec is not None and rec.request_digest == self._digest(name, request)
        done = rec if same and rec is not None and rec.status in ("SUCCEEDED", "FAILED") else None
        if mode == "sandbox":
            return self._substitute(name, original_key, request, done)
        if done is None:
            raise EffectReplayRefused(
                name,
                original_key,
                mode,
                f"effect {name!r} (key {original_key!r}) in node {self.node!r} at step "
                f"{self.step} was not performed by run {self.origin.effects_of!r} with this "
                "request, and this replay runs with effects='original', which never performs "
                "a new effect; nothing was sent. Fork with effects='sandbox' and a substitute "
                "for it, or effects='live' to perform it for real",
            )
        if done.status == "FAILED":
            raise EffectFailed(original_key, done.error or "failed")
        return self._result(done)

    def record(self, name: str, fn: Callable[[], Any], classified: str | None = None) -> Any:
        if self.origin.effects == "live":
            return super().record(name, fn, classified)
        seq = self._next_seq("record", name)
        original = self._original_key("record", name, seq)
        own = self._derive_key("record", name, seq)
        for key in (original, own):
            rec = self.store.get_effect(self.tenant_id, key)
            if rec is not None and rec.kind == "record" and rec.status == "SUCCEEDED":
                return self._result(rec)
        value = fn()
        self._succeed(self._new(own, "record", name, seq, "", classified), None, value)
        return value

    def _original_key(self, kind: str, name: str, seq: int) -> str:
        """The key the original task derived for this call (its run's incarnation, its
        task id), as ``EffectLedger._derive_key`` derives it."""
        inc = self.origin.incarnation
        head = (incarnation_at(inc, self.step),) if inc else ()
        return "wl-" + derive_id(*head, self.origin_task_id, kind, name, seq)

    def _substitute(self, name: str, key: str, request: Any, done: EffectRecord | None) -> Any:
        substitute = self.substitutes.get(name)
        if substitute is None:
            raise EffectReplayRefused(
                name,
                key,
                "sandbox",
                f"effect {name!r} in node {self.node!r} at step {self.step} has no substitute, "
                "and this replay runs with effects='sandbox', which sends nothing for real; "
                f"register one: substitutes={{{name!r}: fn}} (fn receives an EffectCall)",
            )
        original = self._result(done) if done is not None and done.status == "SUCCEEDED" else None
        call = EffectCall(name, key, request, self.node, self.step, done is not None, original)
        return substitute(call)


def replay_ledger(
    base: EffectLedger, origin: ForkOrigin, path: tuple[Any, ...], config: Mapping[str, Any]
) -> ReplayLedger:
    """The fork's ledger for a task with ``path``; substitutes come from the run's config
    (``configurable.substitutes``), which lives in memory only, never in the store."""
    origin_task = derive_id(base.tenant_id, origin.effects_of, base.step, *path)
    substitutes = (config.get("configurable", {}) or {}).get("substitutes") or {}
    return ReplayLedger(base, origin, origin_task, substitutes)
