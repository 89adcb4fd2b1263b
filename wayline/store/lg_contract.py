"""The store's interface to LangGraph threads (``wayline.langgraph.WaylineSaver``): one
family of the store, implemented once over SQL by ``lg_sql.LangGraphSQL``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from wayline.store.lg_records import (
    LgCheckpoint,
    LgFence,
    LgOp,
    LgThreadRows,
    LgValue,
    LgWrite,
)

__all__ = ["LangGraphContract"]


class LangGraphContract(Protocol):
    """LangGraph threads (``wayline.langgraph.WaylineSaver``; a thread is a run)."""

    def lg_put(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint: LgCheckpoint,
        values: Sequence[LgValue],
        writes: Sequence[LgWrite] = (),
        *,
        fence: LgFence | None = None,
    ) -> None:
        """A checkpoint, the channel versions it introduced, and the parent's writes those
        refer to (unless stored already), in one transaction; with ``fence`` (a worker
        running the thread under a lease) only while its token is current, else
        ``LeaseLost`` and nothing written."""
        ...

    def lg_put_writes(
        self,
        tenant_id: str,
        thread_id: str,
        writes: Sequence[LgWrite],
        *,
        replace: bool,
        fence: LgFence | None = None,
    ) -> None: ...

    def lg_write_batch(self, tenant_id: str, thread_id: str, ops: Sequence[LgOp]) -> None:
        """Several ``lg_put`` / ``lg_put_writes`` of one thread, in order, in one
        transaction (``LeaseLost`` and nothing written when any fence is stale)."""
        ...

    def lg_get_checkpoint(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> LgCheckpoint | None: ...

    def lg_list_checkpoints(
        self,
        tenant_id: str,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        before_id: str | None,
        limit: int | None,
    ) -> list[tuple[str, LgCheckpoint]]: ...

    def lg_load_value(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, channel: str, version: str
    ) -> LgValue | None: ...

    def lg_load_value_run(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        version: str,
        limit: int,
    ) -> list[LgValue]: ...

    def lg_load_chain(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, channel: str, root: str
    ) -> list[LgValue]: ...

    def lg_load_chain_below(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        root: str,
        version: str,
        limit: int,
    ) -> list[LgValue]: ...

    def lg_load_chain_at(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        root: str,
        counters: Sequence[str],
    ) -> list[LgValue]: ...

    def lg_load_writes(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[LgWrite]: ...

    def lg_load_channel_writes(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        channel: str,
        checkpoint_ids: Sequence[str],
    ) -> list[LgWrite]: ...

    def lg_delete_runs(self, tenant_id: str, lg_run_ids: Sequence[str]) -> int: ...

    def lg_checkpoints_of_runs(
        self, tenant_id: str, lg_run_ids: Sequence[str]
    ) -> list[tuple[str, str, str]]: ...

    def lg_values_over_writes(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_ids: Sequence[str]
    ) -> list[LgValue]: ...

    def lg_inline_value(self, tenant_id: str, thread_id: str, value: LgValue) -> None: ...

    def lg_thread_rows(self, tenant_id: str, thread_id: str) -> LgThreadRows: ...

    def lg_replace_thread(self, tenant_id: str, thread_id: str, rows: LgThreadRows) -> None: ...
