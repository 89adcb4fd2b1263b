"""``wayline crons list|create|pause|delete``: a store's schedules (``Wayline.schedule``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import wayline
from wayline.errors import WaylineError

__all__ = ["register"]

crons_app = typer.Typer(
    help="Schedules: runs started at every tick of a cron.", no_args_is_help=True
)
console = Console()

DbOption = Annotated[
    str,
    typer.Option("--db", envvar="WAYLINE_DB", help="Store URL, e.g. sqlite:///runs.db"),
]
TenantOption = Annotated[str, typer.Option("--tenant", help="Tenant id.")]
DEFAULT_DB = "sqlite:///wayline.db"


def _client(db: str, tenant: str, *, create: bool = False) -> wayline.Wayline:
    """Only ``create`` may make a new store (a typo'd path is an error, not a new file)."""
    try:
        return wayline.Wayline(wayline.connect(db, create=create), tenant=tenant)
    except WaylineError as exc:
        _fail(str(exc), 2)


def _fail(message: str, code: int = 1) -> NoReturn:
    console.print(f"[red]{escape(message)}[/]", highlight=False)
    raise typer.Exit(code)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


@crons_app.command("list")
def crons_list(db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """List schedules, oldest first, with their next tick (UTC)."""
    table = Table()
    for col in ("schedule", "graph", "cron", "tz", "thread", "next (UTC)", "fires", "state"):
        table.add_column(col)
    for s in _client(db, tenant).schedules():
        table.add_row(
            s.schedule_id,
            f"{s.graph_name}@{s.graph_version}",
            s.cron,
            s.timezone,
            s.thread_id or "(new run each tick)",
            _when(s.next_at),
            str(s.fires),
            "on" if s.enabled else "paused",
        )
    console.print(table)


@crons_app.command("create")
def crons_create(
    graph: Annotated[str, typer.Argument(help="module:graph or file.py:graph")],
    cron: Annotated[str, typer.Option(help="Five fields, e.g. '0 9 * * 1-5'.")],
    input: Annotated[str, typer.Option("--input", help="The run's input, as JSON.")] = "{}",
    timezone: Annotated[str, typer.Option(help="IANA time zone the cron is read in.")] = "UTC",
    thread: Annotated[
        str | None, typer.Option(help="Hand this run (thread) each tick's input.")
    ] = None,
    schedule_id: Annotated[str | None, typer.Option("--id", help="The schedule's id.")] = None,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
) -> None:
    """Create a schedule: a worker serving the graph starts a run at every tick."""
    from wayline.cli.loading import load_graph

    client = _client(db, tenant, create=True)
    try:
        compiled = load_graph(graph, client.store)
        made = client.schedule(
            compiled,
            json.loads(input),
            cron=cron,
            timezone=timezone,
            thread=thread,
            schedule_id=schedule_id,
        )
    except (WaylineError, json.JSONDecodeError) as exc:
        _fail(str(exc), 2)
    console.print(f"schedule {made.schedule_id}: next tick {_when(made.next_at)} UTC")


@crons_app.command("pause")
def crons_pause(
    schedule_id: str,
    resume: Annotated[bool, typer.Option("--resume", help="Fire it again.")] = False,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
) -> None:
    """Stop firing a schedule (``--resume``: from its next tick after now)."""
    try:
        s = _client(db, tenant).pause_schedule(schedule_id, paused=not resume)
    except WaylineError as exc:
        _fail(str(exc))
    state = f"on, next tick {_when(s.next_at)} UTC" if s.enabled else "paused"
    console.print(f"schedule {s.schedule_id}: {state}")


@crons_app.command("delete")
def crons_delete(
    schedule_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default"
) -> None:
    """Delete a schedule (the runs it started stay)."""
    if not _client(db, tenant).delete_schedule(schedule_id):
        _fail(f"no schedule {schedule_id!r}: see wayline crons list")
    console.print(f"schedule {schedule_id} deleted")


def register(app: typer.Typer) -> None:
    app.add_typer(crons_app, name="crons")
