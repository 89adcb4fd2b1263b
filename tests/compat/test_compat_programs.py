"""Programs written against LangGraph give the same observations on wayline after the
import rename (see harness.py). Each program's docstring says what it covers."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="the compatibility suite runs LangGraph itself")
# LangGraph 1.x deprecates its own create_react_agent; the program uses it on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
pytest.importorskip("langchain_core", reason="the programs use langchain-core messages")

from compat_harness import plain, port, run, source  # noqa: E402

SAME = [
    "chatbot",
    "tool_agent",
    "hitl",
    "map_reduce",
    "model_states",
    "parallel_interrupts",
    "quickstart",
    "react_agent",
    "resume_streams",
    "subgraphs",
    "functional",
    "functional_async",
    "functional_interrupts",
    "streaming",
    "streaming_subgraphs",
    "schemas_and_context",
    "limits_and_retries",
    "tool_commands",
    "tool_node_invoke",
    "agent_hooks",
    "api_12",
    "subgraph_persistence",
    "node_features",
    "node_execution",
    "agent_streams",
    "state_schemas",
    "state_history",
    "pregel_api",
    "checkpoint_shapes",
    "task_results",
    "interrupt_chunks",
    "task_cache",
    "task_cancel",
    "tracing",
    "stream_events",
    "subgraph_debug",
    "subgraph_task_config",
    "checkpoints_mode",
    "delta_channel",
    "input_fork",
    "node_finished",
    "subgraph_listing",
    "subgraph_names",
    "exit_results",
    "agent_schemas",
    "task_errors",
    "thread_branches",
    "update_as_end",
    "update_as_last_node",
    "snapshot_tasks",
    "invoke_modes",
    "graph_json",
]


@pytest.mark.parametrize("name", SAME)
def test_program_runs_the_same_on_wayline(name: str, tmp_path: Path) -> None:
    expected = plain(run(name, "langgraph", tmp_path))
    actual = plain(run(name, "wayline", tmp_path))
    assert actual == expected


@pytest.mark.parametrize("name", ["hitl", "subgraphs", "functional"])
def test_program_runs_the_same_on_postgresql(name: str, tmp_path: Path, pg_url: str) -> None:
    expected = plain(run(name, "langgraph", tmp_path))
    assert plain(run(name, "wayline", tmp_path, pg_url)) == expected


@pytest.mark.parametrize("name", SAME)
def test_the_port_only_renames_imports(name: str) -> None:
    original, ported = source(name), port(source(name))
    assert "langgraph" in original and "import langgraph" not in ported
    changed = [
        (a, b) for a, b in zip(original.splitlines(), ported.splitlines(), strict=True) if a != b
    ]
    assert changed and all(
        "import" in a and a.replace("langgraph", "wayline") == b for a, b in changed
    )
