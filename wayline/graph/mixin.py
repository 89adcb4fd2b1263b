"""The run loop's mixins (``TaskSteps``, ``StepCommits``) reach the loop they are part of
through ``as_loop``, and ``CompiledGraph``'s (``LoopDrivers``) the graph through
``as_graph``: typed for the checker, the object itself at run time (no ``typing.cast``
call: ``as_loop`` runs several times a step)."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["as_graph", "as_loop"]

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph
    from wayline.graph.loop import RunLoop

    def as_loop(mixin: object) -> RunLoop:
        """The mixin as the ``RunLoop`` it is part of."""
        ...

    def as_graph(mixin: object) -> CompiledGraph:
        """The mixin as the ``CompiledGraph`` it is part of."""
        ...

else:

    def as_loop(mixin):
        return mixin

    def as_graph(mixin):
        return mixin
