"""The instrument by data class: per tenant and class, what the store holds and what the
retention policy does next (``wayline store report``). Built from the meter (bytes as
written, per channel) and each run's recorded classes; a class already redacted from a
run no longer counts for it. Long-term memory has rows of its own, named as its policy
rules are (``memory.<class>``): its live items (``rows``), their value bytes, the oldest
last write."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict

from wayline.classes import DEFAULT_CLASS
from wayline.control.erasure import held_classes
from wayline.control.policy import DataPolicy, next_action
from wayline.store.base import Store

__all__ = ["ClassRow", "store_report"]


@dataclasses.dataclass(slots=True)
class ClassRow:
    tenant: str
    cls: str
    runs: int = 0
    rows: int = 0
    """Meter rows: one per commit and channel that wrote a value of the class."""
    bytes: int = 0
    oldest: float = 0.0
    """Creation time of the oldest run holding the class (memory: the oldest last write)."""
    next: str = "keep"


def store_report(
    store: Store, policy: DataPolicy | None = None, *, tenants: list[str] | None = None
) -> list[ClassRow]:
    """Every tenant's rows (or those of ``tenants``: the dashboard shows its own)."""
    out: dict[tuple[str, str], ClassRow] = {}
    due: dict[tuple[str, str], tuple[str, float]] = {}
    for tenant in store.tenants() if tenants is None else tenants:
        for run_id in store.run_ids(tenant):
            run = store.get_run(tenant, run_id)
            if run is None:
                continue
            live = held_classes(run) - set(run.redacted)
            per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for m in store.load_meter(tenant, run_id):
                if not m.channel or m.channel.startswith("__"):
                    continue
                cls = run.classes.get(m.channel, DEFAULT_CLASS)
                per[cls][0] += 1
                per[cls][1] += m.bytes
            for cls in live:
                row = out.setdefault((tenant, cls), ClassRow(tenant, cls, oldest=run.created_at))
                row.runs += 1
                row.rows += per[cls][0]
                row.bytes += per[cls][1]
                row.oldest = min(row.oldest, run.created_at)
                step = None if policy is None else next_action(policy, cls, run.updated_at, {})
                if step is not None and ((tenant, cls) not in due or step[1] < due[tenant, cls][1]):
                    due[tenant, cls] = step
        for cls, items, size, oldest in store.memory_classes(tenant):
            name = f"memory.{cls}"
            out[tenant, name] = ClassRow(tenant, name, rows=items, bytes=size, oldest=oldest)
            rule = None if policy is None else policy.memory.get(cls)
            if rule is not None:
                due[tenant, name] = (rule.then, oldest + rule.days * 86400)
    for key, (action, when) in due.items():
        at = dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%d %H:%M")
        out[key].next = f"{action} from {at}"
    return [out[k] for k in sorted(out)]
