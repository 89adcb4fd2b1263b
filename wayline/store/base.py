"""The store interface: every durable byte of a run passes through one of these methods.

``Store`` is one contract per record family, each defined beside the SQL that keeps it:

- ``SchemaContract`` (``sql_core``): the store's URL, tables and schema version;
- ``RunsContract`` (``sql_runs``): runs and claims, leases, retries, cancellations;
  with ``QueueContract`` (``sql_queue``): inputs queued behind a busy run's current one;
- ``StepsContract`` (``sql_steps``): commits (one run or a group) and the reads of steps,
  snapshots, segments, blobs and the meter;
- ``EffectsContract`` (``sql_effects``): the effect ledger;
- ``GovernanceContract`` (``sql_governance``): approvals, audit, a run's rows as a whole;
  with ``RollbackContract`` (``sql_rollback``): a stopped run's later steps removed, and
  ``ErasureContract`` (``sql_rewrite``) and ``SubjectKeysContract`` (``sql_subject_keys``);
- ``StreamEventsContract`` (``stream_sql``): node-emitted events for the server's streams;
- ``LangGraphContract`` (``lg_sql``): LangGraph threads;
- ``MemoryContract`` (``memory_sql``): long-term memory, with ``MemoryDataContract``
  (``memory_data_sql``): its subjects and data classes.

The HTTP server's own rows (keys, threads, assistants, schedules) are beside the store, not
in it (``server_tables``, ``assistant_tables``, ``schedules``).

Every method takes the tenant id, and every backend puts it in every key and every query,
so no call can reach another tenant's rows. Every write of a run is conditional on the
run's fencing token in the same transaction (``LeaseLost`` otherwise).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from wayline.store.lg_contract import LangGraphContract
from wayline.store.memory_data_sql import MemoryDataContract
from wayline.store.memory_sql import MemoryContract
from wayline.store.sql_core import SchemaContract
from wayline.store.sql_effects import EffectsContract
from wayline.store.sql_governance import GovernanceContract
from wayline.store.sql_queue import QueueContract
from wayline.store.sql_rewrite import ErasureContract, RowRewriter
from wayline.store.sql_rollback import RollbackContract
from wayline.store.sql_runs import RunsContract
from wayline.store.sql_steps import StepsContract
from wayline.store.sql_subject_keys import SubjectKeysContract
from wayline.store.stream_sql import StreamEventsContract

__all__ = [
    "EffectsContract",
    "ErasureContract",
    "GovernanceContract",
    "LangGraphContract",
    "MemoryContract",
    "MemoryDataContract",
    "QueueContract",
    "RollbackContract",
    "RowRewriter",
    "RunsContract",
    "SchemaContract",
    "StepsContract",
    "Store",
    "StreamEventsContract",
    "SubjectKeysContract",
]


@runtime_checkable
class Store(
    SchemaContract,
    RunsContract,
    StepsContract,
    EffectsContract,
    GovernanceContract,
    RollbackContract,
    QueueContract,
    ErasureContract,
    SubjectKeysContract,
    StreamEventsContract,
    LangGraphContract,
    MemoryContract,
    MemoryDataContract,
    Protocol,
):
    """One interface, one contract suite (``tests/store``), every backend."""
