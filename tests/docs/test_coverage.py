"""The instrument's coverage, written down: docs/checkpoints.md lists every table of the
schema, says which the meter counts, and the list is checked here against both backends'
schemas and ``METERED_TABLES``: a new table without a line in the doc fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import wayline
from wayline.store.records import METERED_TABLES

DOC = Path(__file__).resolve().parents[2] / "docs" / "checkpoints.md"


def documented() -> dict[str, bool]:
    """table -> metered, from the doc's coverage table."""
    text = DOC.read_text()
    section = text[text.index("## What the meter counts") :]
    rows = re.findall(r"^\| `(\w+)` \| (yes|no) \|", section, flags=re.M)
    return {table: flag == "yes" for table, flag in rows}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_doc_lists_every_table_and_what_the_meter_counts(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'c.db'}"
        if backend == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    store = wayline.connect(url)
    tables = set(store.table_names())
    store.close()
    doc = documented()
    assert set(doc) == tables, (
        f"tables without a line in docs/checkpoints.md: {sorted(tables - set(doc))}; "
        f"lines for tables the schema lacks: {sorted(set(doc) - tables)}"
    )
    assert {t for t, metered in doc.items() if metered} == set(METERED_TABLES)
