"""What every ``wayline`` command shares: the console, the ``--db``/``--tenant`` options,
the invocation's scope, and the one way a command opens the store, names a run and fails
(one red line and an exit code, never a traceback)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

import wayline
from wayline.cli.actor import operator_name
from wayline.errors import WaylineError
from wayline.store.records import RUN_STATUSES

__all__ = [
    "DEFAULT_DB",
    "SESSION",
    "DbOption",
    "TenantOption",
    "check_statuses",
    "console",
    "fail",
    "full_run_id",
    "open_store",
    "operator_client",
    "reported",
    "require_scope",
    "when",
]

console = Console()

DEFAULT_DB = "sqlite:///wayline.db"
"""The store every command uses without ``--db`` or ``WAYLINE_DB``."""

DbOption = Annotated[
    str,
    typer.Option("--db", envvar="WAYLINE_DB", help="Store URL, e.g. sqlite:///runs.db"),
]
TenantOption = Annotated[str, typer.Option("--tenant", help="Tenant id.")]
SESSION: dict[str, str] = {"scope": "admin"}
"""What the whole invocation may do (``--scope`` / ``WAYLINE_SCOPE``): read < execute < admin."""


def require_scope(need: str, what: str) -> None:
    """Exit 1 with the ScopeError's message when this invocation's scope is too low."""
    from wayline.control.scopes import require

    with reported():
        require(SESSION["scope"], need, what)  # type: ignore[arg-type]


def open_store(url: str, *, upgrade: bool = False, create: bool = False) -> wayline.Store:
    """Open the store, or exit 2 with the reason. Only commands that may create a store
    (a worker, ``db upgrade``) pass ``create``: any other, given a path with a typo, says
    so instead of leaving an empty database behind."""
    with reported(2):
        return wayline.connect(url, upgrade=upgrade, create=create)


def operator_client(url: str, tenant: str) -> wayline.Wayline:
    """A client for an operator's command: its actions are audited as ``operator_name()``."""
    scope = SESSION["scope"]
    return wayline.Wayline(open_store(url), tenant=tenant, scope=scope, operator=operator_name())  # type: ignore[arg-type]


def full_run_id(store: wayline.Store, tenant: str, given: str) -> str:
    """The whole id of the run ``given`` names (itself, or a unique prefix); an unknown or
    ambiguous one ends the command as one red line (exit 1)."""
    from wayline.cli.run_ids import resolve_run_id

    with reported():
        return resolve_run_id(store, tenant, given)
    raise AssertionError("unreachable")  # _reported exits


def fail(message: str, code: int = 1) -> NoReturn:
    """Print an error in red and exit with ``code`` (1: refused or failed; 2: bad usage)."""
    console.print(f"[red]{escape(message)}[/]", highlight=False)
    raise typer.Exit(code)


@contextmanager
def reported(code: int = 1) -> Iterator[None]:
    """A typed wayline error (or bad JSON from the command line) becomes one red line and
    exit ``code``, never a traceback."""
    import json

    try:
        yield
    except (WaylineError, json.JSONDecodeError) as exc:
        fail(str(exc), code)


def check_statuses(statuses: list[str]) -> None:
    unknown = [s for s in statuses if s not in RUN_STATUSES]
    if unknown or not statuses:
        fail(f"unknown status {', '.join(unknown) or '(none)'}: use {', '.join(RUN_STATUSES)}", 2)


def when(ts: float, *, seconds: bool = True) -> str:
    fmt = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime(fmt)
