"""The execution plane: workers that claim runs under leases and keep them alive."""

from wayline.worker.worker import Worker, WorkerConfig

__all__ = ["Worker", "WorkerConfig"]
