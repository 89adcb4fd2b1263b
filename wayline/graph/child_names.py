"""A subgraph's checkpoints named as LangGraph names them.

wayline runs a subgraph as a run of its own (``<parent>::<node>:<task id>``), so its
checkpoints' configs name that run. LangGraph names them by the root's ``thread_id``, the
subgraph's ``checkpoint_ns`` and a ``checkpoint_map`` from each namespace above it to the
checkpoint it ran under (also the checkpoint's ``metadata["parents"]``). The configs
``get_state(subgraphs=True)``, a child's history and the ``checkpoints`` stream give are
spelled so; ``subgraph_travel.by_namespace`` and ``open_pinned`` read them back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from wayline.graph import travel
from wayline.graph.types import StateSnapshot
from wayline.ids import derive_id
from wayline.interop.lg_paths import PULL
from wayline.store.base import Store

__all__ = ["NS_SEP", "SEP", "above_of", "named_config", "named_event", "named_snapshot"]

SEP = "::"
"""Separates a parent run id from the namespace of a child run."""
NS_SEP = "|"
"""Joins the segments of a LangGraph namespace (``checkpoint_ns``)."""


def named_config(conf: Mapping[str, Any], above: Mapping[str, str]) -> dict[str, Any]:
    """A child run's checkpoint config with the root's thread, its namespace and the map of
    the checkpoints ``above`` it and itself (one named already is named again over
    ``above``); a root's config as is."""
    root, *segments = str(conf["thread_id"]).split(SEP)
    ns = NS_SEP.join(segments) if segments else str(conf.get("checkpoint_ns") or "")
    if not ns:
        return dict(conf)
    cmap = {**above, ns: conf["checkpoint_id"]}
    return {**conf, "thread_id": root, "checkpoint_ns": ns, "checkpoint_map": cmap}


def named_snapshot(snapshot: StateSnapshot, above: Mapping[str, str]) -> StateSnapshot:
    """A child checkpoint (config, parent config and ``parents``) named as LangGraph's."""
    conf = snapshot.config["configurable"]
    if SEP not in str(conf["thread_id"]) and not conf.get("checkpoint_ns"):
        return snapshot
    parent = snapshot.parent_config
    return dataclasses.replace(
        snapshot,
        config={"configurable": named_config(conf, above)},
        parent_config=None
        if parent is None
        else {**parent, "configurable": named_config(parent["configurable"], above)},
        metadata={**snapshot.metadata, "parents": dict(above)},
    )


def named_event(event: dict[str, Any], above: Mapping[str, str]) -> dict[str, Any]:
    """A child's ``checkpoints`` stream event named as LangGraph's."""
    parent = event.get("parent_config")
    return {
        **event,
        "config": {"configurable": named_config(event["config"]["configurable"], above)},
        "parent_config": None
        if parent is None
        else {"configurable": named_config(parent["configurable"], above)},
        "metadata": {**event["metadata"], "parents": dict(above)},
    }


def above_of(store: Store, tenant: str, run_id: str) -> dict[str, str]:
    """The checkpoints a child run's task ran under, by namespace: for each graph above it,
    the step before the one whose task for the node derives the task id of its segment. A
    persistent child's segment (``node``, no task id) runs under many: {}."""
    root, *segments = run_id.split(SEP)
    found: dict[str, str] = {}
    run = root
    for i, segment in enumerate(segments):
        node, _, task_id = segment.partition(":")
        record = store.get_run(tenant, run)
        if not task_id or record is None:
            return {}
        step = next(
            (
                k
                for k in range(record.step + 1, -1, -1)
                if derive_id(tenant, run, k, PULL, node) == task_id
            ),
            None,
        )
        if step is None:
            return {}
        found[NS_SEP.join(segments[:i])] = travel.checkpoint_id(tenant, run, step - 1)
        run = SEP.join((run, segment))
    return found
