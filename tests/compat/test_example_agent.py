"""examples/approval_agent.py: the ported tutorial agent runs without network, pauses for
review twice and finishes with the approved refund."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain_core", reason="the example uses langchain-core messages")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "approval_agent.py"


def test_the_ported_tutorial_agent_waits_for_review_and_finishes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("approval_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["approval_agent"] = module
    spec.loader.exec_module(module)
    lines = module.main(str(tmp_path / "runs.db"))
    assert lines == [
        "review: [('refund', {'order_id': 'A7', 'amount': 120})]",
        "answer: {'action': 'feedback', 'feedback': 'Refund half: the customer keeps one item.'}",
        "review: [('refund', {'order_id': 'A7', 'amount': 60})]",
        "answer: {'action': 'approve'}",
        "final: Refunded 60 EUR on order A7.",
    ]
