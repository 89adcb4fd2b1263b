"""Effects that happen once: the ledger behind ``ctx.effect`` and ``ctx.record``."""

from wayline.effects.ledger import NOT_FOUND, EffectLedger
from wayline.effects.retry import RetryPolicy

__all__ = ["NOT_FOUND", "EffectLedger", "RetryPolicy"]
