"""LlamaIndex Workflows on wayline: a ``Runtime`` whose runs live in wayline's store
(``WaylineRuntime``), effects through wayline's ledger (``effect``, ``record``), and a
worker that claims queued runs (``LlamaIndexWorker``). The only package importing
``workflows`` (the ``wayline[llamaindex]`` extra)."""

from wayline.llamaindex.effects import effect, record
from wayline.llamaindex.runtime import LlamaRun, WaylineRuntime, workflow_identity
from wayline.llamaindex.worker import LlamaIndexWorker

__all__ = [
    "LlamaIndexWorker",
    "LlamaRun",
    "WaylineRuntime",
    "effect",
    "record",
    "workflow_identity",
]
