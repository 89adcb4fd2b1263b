"""The run loop's mixins (``TaskSteps``, ``StepCommits``) reach the loop they are part of
through ``as_loop``: typed as ``RunLoop`` for the checker, the object itself at run time
(no ``typing.cast`` call: it runs several times a step)."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["as_loop"]

if TYPE_CHECKING:
    from wayline.graph.loop import RunLoop

    def as_loop(mixin: object) -> RunLoop:
        """The mixin as the ``RunLoop`` it is part of."""
        ...

else:

    def as_loop(mixin):
        return mixin
