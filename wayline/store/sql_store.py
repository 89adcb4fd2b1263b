"""What SQLite and PostgreSQL share: every Store method, written once over the named
queries in ``wayline.store.sql.queries``, one mixin per record family (each beside its
contract: see ``wayline.store.base``). A backend supplies connections, transactions, its
schema and its placeholder style (``SQLCore``'s hooks); nothing here knows which database
it talks to."""

from __future__ import annotations

from wayline.store.checkpoint_reading import CheckpointReading
from wayline.store.lg_sql import LangGraphSQL
from wayline.store.memory_data_sql import MemoryDataSQL
from wayline.store.sql_core import (
    SCHEMA_VERSION,
    Executor,
    SQLCore,
    load_queries,
    migrations,
    split_statements,
)
from wayline.store.sql_fence import created_params, fence_params, first_fence, nodes_json
from wayline.store.sql_governance import GovernanceSQL
from wayline.store.sql_rewrite import RewriteMixin
from wayline.store.sql_rollback import RollbackSQL
from wayline.store.sql_steps import StepsSQL
from wayline.store.sql_subject_keys import SubjectKeysMixin
from wayline.store.stream_sql import StreamEventsSQL

__all__ = [
    "SCHEMA_VERSION",
    "Executor",
    "SQLCore",
    "SQLStore",
    "created_params",
    "fence_params",
    "first_fence",
    "load_queries",
    "migrations",
    "nodes_json",
    "split_statements",
]


class SQLStore(
    StepsSQL,  # with RunsSQL (and its QueueSQL) and EffectsSQL, whose rows a commit writes
    GovernanceSQL,
    RollbackSQL,
    RewriteMixin,
    SubjectKeysMixin,
    LangGraphSQL,
    StreamEventsSQL,
    MemoryDataSQL,  # with MemorySQL: items, then subjects and classes
    CheckpointReading,  # LangGraph's checkpointer reads, through the graphs compiled on it
):
    """The Store protocol over SQL. Subclasses implement ``_tx``, ``_read``,
    ``_read_dicts``, ``table_names`` and ``close``, and set ``q`` (from ``load_queries``)
    and ``url``."""
