"""``CommitBatch.plain``: a commit skips every row of a plain batch but its deltas and run
row, so each field that writes rows of its own must make a batch not plain (a field left
out would be dropped from commits silently)."""

from __future__ import annotations

import dataclasses
from typing import Any

from wayline.store.records import CommitBatch, DeltaRecord, RunUpdate

WRITTEN_WITH_THE_RUN_ROW = {"deltas", "run", "take_inbox", "create"}
"""What the fenced update and the delta insert write, before the per-batch rows."""


def _set(field: dataclasses.Field[Any]) -> Any:
    """A value that makes ``field`` say something (what the batch is built with aside)."""
    if field.name == "clear_pending_through":
        return 3
    if field.name == "versions":
        return ("2", "s2", "fp", None)
    if field.name in ("wake", "create"):
        return object()
    if field.name == "take_inbox":
        return True
    if field.name == "run":
        return RunUpdate(status="running", step=1, next_nodes=())
    return [object()]


def test_every_field_that_writes_rows_of_its_own_makes_a_batch_not_plain() -> None:
    assert CommitBatch().plain()
    assert CommitBatch(deltas=[DeltaRecord(1, b"x", ())]).plain()
    fields = dataclasses.fields(CommitBatch)
    assert {f.name for f in fields} >= WRITTEN_WITH_THE_RUN_ROW
    for field in fields:
        batch = CommitBatch(**{field.name: _set(field)})
        expected = field.name in WRITTEN_WITH_THE_RUN_ROW
        assert batch.plain() is expected, field.name
