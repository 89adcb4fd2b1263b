"""Scopes: read is execution, so access is graded.

Whoever can read a run's checkpoint can continue it as that run (its state is all a worker
needs), so reading and executing are separate grants: ``read`` (state, history, audit,
exports), ``execute`` (also start, resume, approve, cancel, retry), ``admin`` (also
purge, erase, retention policies, migrations). The client (``Wayline(..., scope=...)``)
and the CLI (``--scope`` / ``WAYLINE_SCOPE``) check them before anything is read or
written; on PostgreSQL the roles in docs/data.md enforce the same split in the database.
"""

from __future__ import annotations

from typing import Literal, get_args

from wayline.errors import ConfigError, ScopeError

__all__ = ["SCOPES", "Scope", "allows", "check_scope", "require"]

Scope = Literal["read", "execute", "admin"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
_RANK: dict[str, int] = {s: i for i, s in enumerate(SCOPES)}


def check_scope(scope: str) -> Scope:
    for known in SCOPES:
        if scope == known:
            return known
    raise ConfigError(f"scope {scope!r} must be one of {', '.join(SCOPES)}")


def allows(have: str, need: Scope) -> bool:
    return _RANK.get(have, -1) >= _RANK[need]


def require(have: str, need: Scope, what: str) -> None:
    """Raise ``ScopeError`` unless ``have`` reaches ``need``."""
    if not allows(have, need):
        raise ScopeError(
            f"cannot {what} with {have!r} scope: it needs {need!r} (read < execute < admin). "
            f"Use a client or key with {need!r} scope; nothing was read or written"
        )
