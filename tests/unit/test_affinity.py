"""CPUs named the wrong way (``wayline.worker.affinity.check_cpus``, which ``Worker`` calls
before anything runs) are refused with what to write instead."""

from __future__ import annotations

from typing import Any

import pytest

from wayline.errors import ConfigError
from wayline.worker.affinity import check_cpus


@pytest.mark.parametrize(
    ("cpus", "says"),
    [
        ("all", r"cpus='all' is text: .* None to leave its threads to the OS"),
        ("0,1", r"cpus='0,1' is text: give CPU numbers as a set"),
        ({"0"}, r"cpus names '0': CPUs are numbers"),
        ({True}, r"cpus names True: CPUs are numbers"),
    ],
)
def test_cpus_that_are_not_numbers_are_refused_by_name(cpus: Any, says: str) -> None:
    """``cpus="all"`` once failed as CPUs ``['a', 'l']``: the text was read letter by letter."""
    with pytest.raises(ConfigError, match=says):
        check_cpus(cpus)
