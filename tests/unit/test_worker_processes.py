"""How ``wayline worker`` shares its ``--concurrency`` slots among processes
(``wayline.cli.worker_processes``): on a SQLite file ``auto`` gives a process to each usable
CPU while each gets ``SLOTS_A_PROCESS`` slots, on PostgreSQL one, and the command's total is
never changed."""

from __future__ import annotations

import pytest

from wayline.cli import worker_processes as wp
from wayline.errors import ConfigError

DB = "sqlite:///app.db"


@pytest.fixture
def four_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    import wayline.worker.affinity as affinity

    monkeypatch.setattr(affinity, "allowed_cpus", lambda: [0, 1, 2, 3])


@pytest.mark.usefixtures("four_cpus")
def test_auto_gives_each_usable_cpu_a_process_of_four_slots_or_more() -> None:
    assert wp.SLOTS_A_PROCESS == 4
    counts = {c: wp.process_count("auto", c, "auto", DB) for c in (1, 4, 7, 8, 11, 12, 16, 64)}
    assert counts == {1: 1, 4: 1, 7: 1, 8: 2, 11: 2, 12: 3, 16: 4, 64: 4}
    assert wp.process_count("auto", 16, "all", DB) == 4  # left to the OS: the same count
    assert wp.process_count("auto", 16, "auto:2", DB) == 1  # a child its parent placed


@pytest.mark.usefixtures("four_cpus")
def test_auto_is_one_process_off_a_sqlite_file() -> None:
    assert wp.process_count("auto", 16, "auto", "postgresql://u@h/db") == 1
    assert wp.process_count("auto", 16, "auto", "sqlite:///:memory:") == 1  # its own store
    assert wp.process_count("4", 16, "auto", "postgresql://u@h/db") == 4  # as given


def test_a_cpu_list_bounds_the_processes() -> None:
    from wayline.worker.affinity import allowed_cpus

    first = allowed_cpus()[0]
    assert wp.process_count("auto", 64, str(first), DB) == 1


def test_slots_are_shared_out_and_add_up_to_the_concurrency() -> None:
    assert wp.split_slots(8, 2) == [4, 4]
    assert wp.split_slots(11, 3) == [4, 4, 3]
    assert wp.split_slots(5, 5) == [1] * 5
    for concurrency in range(1, 40):
        for processes in range(1, concurrency + 1):
            slots = wp.split_slots(concurrency, processes)
            assert sum(slots) == concurrency and min(slots) >= 1
            assert max(slots) - min(slots) <= 1


def test_a_given_count_is_kept_and_checked() -> None:
    assert wp.process_count("3", 3, "auto", DB) == 3
    with pytest.raises(ConfigError, match="--processes 4 with --concurrency 2"):
        wp.process_count("4", 2, "auto", DB)
    for bad in ("0", "two", "-1"):
        with pytest.raises(ConfigError, match="write a number of processes, or auto"):
            wp.process_count(bad, 8, "auto", DB)
