"""Segment merging keeps its counts within the stated bounds (counts, never times)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from wayline.graph.segments import FANOUT, LogIndex, Segment, advance


def simulate(snapshots: int, per_snapshot: int, fanout: int) -> tuple[LogIndex, list[Segment]]:
    index: LogIndex | None = None
    written: list[Segment] = []
    for k in range(1, snapshots + 1):
        index, new = advance(index, "log", k * 10, k * per_snapshot, fanout)
        written.extend(new)
    assert index is not None
    return index, written


@pytest.mark.parametrize("fanout", [2, 3, 8, FANOUT])
@pytest.mark.parametrize("snapshots", [1, 7, 64, 65, 200, 1000])
def test_segments_tile_the_log_and_stay_within_bounds(fanout: int, snapshots: int) -> None:
    index, written = simulate(snapshots, 5, fanout)
    # The live segments cover [0, length) in order, with no gap and no overlap.
    assert index.length == snapshots * 5
    assert index.segments[0].start == 0
    for a, b in zip(index.segments, index.segments[1:], strict=False):
        assert a.end == b.start and a.last_step == b.after_step
    assert index.segments[-1].end == index.length
    # Reads: at most fanout - 1 segments per level (the index is a base-fanout counter).
    levels = Counter(s.level for s in index.segments)
    assert all(count < fanout for count in levels.values())
    assert len(levels) <= 1 + math.floor(math.log(snapshots, fanout)) if snapshots > 1 else 1
    # Writes: an item is written once per level it passes through, never more.
    per_item = Counter(i for s in written for i in range(s.start, s.end))
    bound = 1 + math.floor(math.log(snapshots, fanout)) if snapshots > 1 else 1
    assert max(per_item.values()) <= bound
    # Every live segment was written, and written exactly once.
    ids = Counter(s.seg_id for s in written)
    assert max(ids.values()) == 1
    assert {s.seg_id for s in index.segments} <= set(ids)


def test_a_segment_merged_in_the_same_snapshot_is_never_written() -> None:
    _, written = simulate(4, 1, 2)  # 4 level-1 segments cascade into one level-3 segment
    assert [(s.level, s.start, s.end) for s in written] == [
        (1, 0, 1),
        (2, 0, 2),  # the second level-1 segment merged at once: never written on its own
        (1, 2, 3),
        (3, 0, 4),
    ]


def test_no_segment_when_nothing_was_appended() -> None:
    index, written = advance(None, "log", 10, 3)
    again, none = advance(index, "log", 20, 3)
    assert len(written) == 1 and none == []
    assert again.segments == index.segments and again.covered == 20


def test_index_round_trips_through_its_wire_form() -> None:
    index, _ = simulate(70, 3, 8)
    assert LogIndex.from_wire(index.to_wire()) == index
