"""A run id on the command line: the whole id, or a prefix that starts exactly one run's id
of the tenant (as git takes a commit's prefix), so ids need not be copied whole."""

from __future__ import annotations

from wayline.errors import AmbiguousRunIdError, RunNotFoundError
from wayline.store.base import Store

__all__ = ["resolve_run_id", "unique_prefixes"]

SHOWN = 5
"""Candidates an ambiguous prefix's error lists."""


def resolve_run_id(store: Store, tenant: str, given: str) -> str:
    """The run id ``given`` names: itself when a run has that id, else the one id of the
    tenant that starts with it. An unknown or ambiguous prefix is a typed error that names
    the tenant (and the candidates)."""
    if given and store.get_run(tenant, given) is not None:
        return given
    found = store.run_ids_with_prefix(tenant, given, limit=SHOWN + 1) if given else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise RunNotFoundError(
            f"no run of tenant {tenant!r} has an id starting with {given!r}: "
            "'wayline runs list' shows the runs (and --tenant chooses another tenant)"
        )
    more = ", ..." if len(found) > SHOWN else ""
    raise AmbiguousRunIdError(
        f"{given!r} starts the ids of several runs of tenant {tenant!r} "
        f"({', '.join(found[:SHOWN])}{more}): give more of the id"
    )


def unique_prefixes(store: Store, tenant: str, ids: list[str], *, least: int = 8) -> dict[str, str]:
    """Each of ``ids`` cut to the shortest prefix (at least ``least`` characters) that no
    other run of the tenant starts with, so that ``resolve_run_id`` takes it back; an id
    another run's id extends stays whole. One indexed query per id (and per extension)."""
    out: dict[str, str] = {}
    for run_id in ids:
        cut = min(least, len(run_id))
        while cut < len(run_id):
            found = store.run_ids_with_prefix(tenant, run_id[:cut], limit=2)
            if len(found) <= 1:
                break
            # the next character where the two differ: one more query at most per run
            other = found[1] if found[0] == run_id else found[0]
            common = cut
            while common < min(len(run_id), len(other)) and run_id[common] == other[common]:
                common += 1
            cut = common + 1
        out[run_id] = run_id[:cut]
    return out
