"""An effect record for tests that write one straight to a store: the fields a ledger would
fill, any of them overridden by keyword."""

from __future__ import annotations

import dataclasses
from typing import Any

from wayline.store.records import EffectRecord


def effect_record(**fields: Any) -> EffectRecord:
    base = EffectRecord(
        tenant_id="t",
        key="k1",
        run_id="r1",
        kind="effect",
        node="charge",
        step=2,
        name="charge",
        seq=0,
        attempt=1,
        request_digest="d1",
        status="EXECUTING",
        fencing_token=0,
    )
    return dataclasses.replace(base, **fields)
