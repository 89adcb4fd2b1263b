"""Effects that happen once: the ledger behind ``ctx.effect`` and ``ctx.record``, and what
a replay or fork does with them instead (``replay``)."""

from wayline.effects.ledger import NOT_FOUND, EffectLedger
from wayline.effects.replay import EffectCall
from wayline.effects.retry import RetryPolicy

__all__ = ["NOT_FOUND", "EffectCall", "EffectLedger", "RetryPolicy"]
