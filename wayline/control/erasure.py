"""Erasure by data class and by data subject.

Redacting a class replaces every stored value of the run's channels of that class by a
``Redacted(cls, at)`` tombstone: in each delta and pending write (the values are encoded
one by one, so a value is replaced without decoding any other), in each snapshot, and by
dropping the segments of an append-only channel of that class and the blobs no kept value
still refers to. A queued input of the run is dropped. The run's shape (steps, statuses,
digests, meter, audit log) and the other classes' values stay; the classes are the ones
recorded with the run when it was created (``runs.classes``), never a later graph's.

Erasing a subject acts on every run that names it (``runs.subject``): with ``classes``,
those classes are redacted from each run; without, each run is purged whole. The receipt
(what was erased, rows per table) is written to the audit log under the digest of the
subject, so the audit log keeps the proof of erasure without keeping the subject's id.

Not classed (so not touched by a redaction): interrupt proposals and answers and effect
results. Purge the run (erase the subject without ``classes``) to remove those too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import ormsgpack

from wayline.classes import DEFAULT_CLASS, Redacted
from wayline.codec import EXT_REF, Codec
from wayline.errors import CorruptionError, LeaseConflictError, RunNotFoundError, WaylineError
from wayline.store.base import Store
from wayline.store.records import AuditRecord, RunRecord
from wayline.store.subject_keys import subject_digest

__all__ = ["Redactor", "erase_subject", "redact_run", "run_classes", "subject_digest"]

_REF_PREFIX = bytes([0xC7, 32, EXT_REF])
_TOMB_MARK = b"wayline.Redacted"
_CODEC = Codec()  # knows Redacted; redaction never decodes a user's value


def run_classes(run: RunRecord, keys: Iterable[str] = ()) -> dict[str, str]:
    """The class of each of ``keys`` (and of each labelled key) as the run recorded them."""
    out = {k: DEFAULT_CLASS for k in keys}
    out.update(run.classes)
    return out


def held_classes(run: RunRecord) -> set[str]:
    """Classes a run can hold: its labelled classes and "default"."""
    return {DEFAULT_CLASS, *run.classes.values()}


def _is_tombstone(data: bytes) -> bool:
    if _TOMB_MARK not in data[:24]:
        return False
    try:
        return isinstance(_CODEC.loads(data), Redacted)
    except WaylineError:
        return False


class Redactor:
    """A ``RowRewriter`` that replaces the values of ``erase`` classes by tombstones."""

    def __init__(self, classes: Mapping[str, str], erase: Collection[str], at: float) -> None:
        self.classes = classes
        self.erase = set(erase)
        self.at = at
        self.kept: set[str] = set()

    def _erased(self, key: str) -> str | None:
        cls = self.classes.get(key, DEFAULT_CLASS)
        return cls if cls in self.erase and not key.startswith("__") else None

    def _value(self, key: str, data: bytes) -> bytes:
        cls = self._erased(key)
        if cls is None or _is_tombstone(data):
            if len(data) == 35 and data.startswith(_REF_PREFIX):
                self.kept.add(data[3:].hex())
            return data
        return _CODEC.dumps(Redacted(cls, self.at))

    def inbox(self, data: bytes) -> bytes | None:
        return None  # a queued input of a run being redacted is not applied any more

    def results(self, data: bytes) -> bytes:
        wire = ormsgpack.unpackb(data)
        changed = False
        for _name, _path, writes in wire:
            for pair in writes:
                new = self._value(pair[0], pair[1])
                changed |= new is not pair[1]
                pair[1] = new
        return ormsgpack.packb(wire) if changed else data

    def snapshot(self, data: bytes) -> bytes:
        raw = ormsgpack.unpackb(data)
        changed = False
        for key in [k for k in raw["logs"] if self._erased(k)]:
            del raw["logs"][key]  # its segments are dropped; the tombstone stands for it
            raw["channels"][key] = b""
        for key, value in raw["channels"].items():
            new = self._value(key, value)
            changed |= new is not value
            raw["channels"][key] = new
        raw["next"] = self._value("__next__", raw["next"])
        return ormsgpack.packb(raw) if changed else data

    def drop_segment(self, channel: str) -> bool:
        return self._erased(channel) is not None

    def erase_value(self, cls: str, data: bytes) -> bytes:
        if cls not in self.erase or _is_tombstone(data):
            return data
        return _CODEC.dumps(Redacted(cls, self.at))

    def referenced(self) -> set[str]:
        return self.kept


def redact_run(
    store: Store,
    tenant_id: str,
    run_id: str,
    classes: Collection[str],
    *,
    actor: str = "admin",
    at: float | None = None,
    scrub: bool = True,
) -> dict[str, int]:
    """Erase the values of ``classes`` from every row of a run (see the module docstring);
    returns the rows changed per table, also written to the run's audit log. A class the
    run does not hold changes nothing."""
    run = store.get_run(tenant_id, run_id)
    if run is None:
        raise RunNotFoundError(f"no run {run_id!r} for tenant {tenant_id!r}")
    erase = set(classes) & held_classes(run)
    if not erase:
        return {}
    at = time.time() if at is None else at
    counts = store.rewrite_run(
        tenant_id,
        run_id,
        Redactor(run.classes, erase, at),
        {c: at for c in sorted(erase)},
    )
    detail = json.dumps({"classes": sorted(erase), "rows": counts}, sort_keys=True)
    store.append_audit(AuditRecord(tenant_id, run_id, actor, "redact", "erased", detail=detail))
    if scrub:
        store.scrub()
    return counts


def erase_subject(
    store: Store,
    tenant_id: str,
    subject: str,
    *,
    classes: Collection[str] | None = None,
    actor: str = "admin",
) -> dict[str, Any]:
    """Erase a data subject from every run that names it: ``classes`` redacted from each,
    or (None) each run purged whole. Returns the receipt, also appended to the audit log
    under the subject's digest (never the subject itself)."""
    if not subject:
        raise WaylineError("erase_subject needs a subject (the id runs were started with)")
    runs = store.runs_of_subject(tenant_id, subject)
    if classes is not None:  # all or nothing: no run half-erased because another is busy
        for run_id in runs:  # or has a row that cannot be read (redaction reads each row)
            run = store.get_run(tenant_id, run_id)
            if run is not None and run.lease_owner and (run.lease_expires_at or 0) > time.time():
                raise LeaseConflictError(
                    f"run {run_id!r} of this subject is being executed by {run.lease_owner!r}: "
                    "cancel it (or wait until it settles), then erase; nothing was changed"
                )
            _, problems = store.check_rows(tenant_id, run_id)
            if problems:
                first = problems[0]
                raise CorruptionError(
                    f"{first} Nothing of the subject was erased: restore the row and erase "
                    "again, or erase the subject's runs whole (no classes), which reads no row",
                    table=first.table,
                    tenant_id=first.tenant_id,
                    run_id=first.run_id,
                    step=first.step,
                )
    tables: dict[str, int] = {}
    at = time.time()
    for run_id in runs:
        if classes is None:  # counted, not read: a damaged row does not block its erasure
            counts = {t: n for t, n in store.count_rows(tenant_id, run_id).items() if n}
            store.purge_run(tenant_id, run_id)
        else:
            counts = redact_run(store, tenant_id, run_id, classes, actor=actor, at=at, scrub=False)
        for table, n in counts.items():
            tables[table] = tables.get(table, 0) + n
    memory = store.memory_erase_subject(tenant_id, subject, classes)  # long-term memory
    if memory:
        tables["memory"] = memory
    keys = store.destroy_subject_keys(tenant_id, subject, classes)  # crypto-shredding
    digest = subject_digest(subject)
    receipt: dict[str, Any] = {
        "subject": digest,
        "mode": "purge" if classes is None else "redact",
        "classes": None if classes is None else sorted(classes),
        "runs": runs,
        "rows": dict(sorted(tables.items())),
        "keys_destroyed": keys,
        "at": at,
    }
    store.append_audit(
        AuditRecord(
            tenant_id,
            digest,
            actor,
            "erase_subject",
            "erased",
            detail=json.dumps(receipt, sort_keys=True),
            at=at,
        )
    )
    receipt["scrub"] = store.scrub()
    return receipt
