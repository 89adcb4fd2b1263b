"""A sample of the frameworks crash test (the full matrix is ``wayline crashtest
--framework ...`` / ``bench/frameworks_crash.py``): a LlamaIndex workflow SIGKILLed by the
payments service right after it committed the charge, before LlamaIndex recorded the step,
then resumed by a fresh process. LlamaIndex's documented snapshot loop charges twice; on
wayline (``WaylineRuntime`` and ``wayline.llamaindex.effect``) once."""

from __future__ import annotations

from pathlib import Path

import pytest

from wayline.demo.frameworks_crash import expected, run_framework_trial

pytest.importorskip("workflows", reason="needs the wayline[llamaindex] extra")
pytestmark = pytest.mark.crash


@pytest.mark.parametrize("arm", ["plain", "wayline"])
def test_llamaindex_killed_after_the_charge(arm: str, tmp_path: Path) -> None:
    trial = run_framework_trial("llamaindex", arm, "after_charge", 0, tmp_path)
    assert trial.error is None
    assert (
        trial.charges == expected("llamaindex", arm, "after_charge") == (2 if arm == "plain" else 1)
    )


def test_llamaindex_on_wayline_killed_after_the_record(tmp_path: Path) -> None:
    trial = run_framework_trial("llamaindex", "wayline", "after_record", 0, tmp_path)
    assert (trial.error, trial.charges) == (None, 1)
