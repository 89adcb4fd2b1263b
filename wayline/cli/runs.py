"""``wayline runs`` and ``wayline effects``: inspect, verify, retry and cancel runs, list
and resolve their effects."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from wayline.cli.actor import operator_name
from wayline.cli.common import (
    DEFAULT_DB,
    DbOption,
    TenantOption,
    check_statuses,
    console,
    fail,
    full_run_id,
    open_store,
    operator_client,
    reported,
    require_scope,
    when,
)
from wayline.store.records import RUN_STATUSES

__all__ = ["effects_app", "runs_app"]

runs_app = typer.Typer(help="Inspect runs in a store.", no_args_is_help=True)
effects_app = typer.Typer(help="Inspect and resolve a run's effects.", no_args_is_help=True)


@runs_app.command("list")
def runs_list(
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
    status: Annotated[
        str | None, typer.Option(help=f"Only runs with this status: {', '.join(RUN_STATUSES)}.")
    ] = None,
    limit: int = 50,
    ids_only: Annotated[
        bool, typer.Option("--ids", help="Only the whole run ids, one a line (for scripts).")
    ] = False,
) -> None:
    """List runs, newest first. The run column is each id's shortest prefix no other run
    of the tenant starts with (at least 8 characters): every command takes it back."""
    from wayline.cli.run_ids import unique_prefixes

    if status is not None:
        check_statuses([status])
    store = open_store(db)
    runs = store.list_runs(tenant, status=status, limit=limit)  # type: ignore[arg-type]
    if ids_only:
        for run in runs:
            print(run.run_id)
        return
    ids = unique_prefixes(store, tenant, [r.run_id for r in runs])
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("run", no_wrap=True)
    graphs = [f"{r.graph_name}@{r.graph_version}" for r in runs]
    table.add_column("graph", overflow="fold", min_width=min(24, max(map(len, graphs), default=5)))
    table.add_column("status", no_wrap=True)
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("next", overflow="fold")
    table.add_column("updated (UTC)", no_wrap=True)
    table.add_column("error", ratio=1, min_width=12)
    for i, run in enumerate(runs):
        table.add_row(
            ids[run.run_id],
            graphs[i],
            run.status,
            _step(run.step),
            ", ".join(run.next_nodes),
            when(run.updated_at, seconds=False),
            escape(_brief(run.error)),  # why it failed, or why its row cannot be read
        )
    console.print(table)


def _step(step: int) -> str:
    """A run's committed step; "-" before its input is committed (a queued run: the input
    becomes step 0 when a worker takes it)."""
    return "-" if step < 0 else str(step)


def _brief(error: str | None, width: int = 60) -> str:
    if not error:
        return ""
    return error if len(error) <= width else error[: width - 1] + "…"


@runs_app.command("show")
def runs_show(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """Show one run's row."""
    store = open_store(db)
    run_id = full_run_id(store, tenant, run_id)
    run = store.get_run(tenant, run_id)
    if run is None:
        fail(f"no run {run_id!r} for tenant {tenant!r}")
    table = Table(show_header=False)
    for field in run.__dataclass_fields__:
        value = getattr(run, field)
        if field == "shape":  # the fingerprint stands for it; the JSON is for diagnostics
            continue
        if field.endswith("_at") and isinstance(value, float):
            value = when(value)
        if field == "step" and value < 0:
            value = "- (its input is queued: a worker commits it as step 0)"
        table.add_row(field, str(value))
    from wayline.graph.travel import load_origin

    origin = load_origin(store, tenant, run_id)
    if origin is not None:  # a fork: where it came from and how it treats effects
        table.add_row("origin", origin.describe())
    if run.status == "pending" and run.lease_owner is None:
        shape = f" with fingerprint {run.fingerprint}" if run.fingerprint else ""
        table.add_row(
            "waits for",
            f"a worker serving {run.graph_name}@{run.graph_version}{shape}, "
            f"since {when(run.updated_at)}",
        )
    console.print(table)


@runs_app.command("verify")
def runs_verify(
    run_id: str,
    graph: Annotated[
        str | None,
        typer.Option(help="The run's graph (module:attribute): also re-fold its state."),
    ] = None,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
) -> None:
    """Check a run's stored rows (checksums, missing rows, envelopes), finished or not; with
    --graph also reconstruct its state and compare a finished run with its committed digest."""
    from wayline.control.integrity import check_run

    store = open_store(db)
    run_id = full_run_id(store, tenant, run_id)
    with reported():
        compiled = None
        if graph is not None:
            from wayline.cli.loading import load_graph

            compiled = load_graph(graph, store)
        report = check_run(store, tenant, run_id, compiled)
    for problem in report.problems:
        console.print(f"[bold red]corrupt:[/] {problem}")
    what = "rows and state" if report.folded else "rows"
    verdict = "[green]intact[/]" if report.ok else f"[bold red]{len(report.problems)} problem(s)[/]"
    digest = ""
    if report.digest_ok is not None:
        digest = ", equal to its committed digest" if report.digest_ok else ", DIFFERENT digest"
    console.print(
        f"run {run_id} ({report.status}, step {report.step}): {report.rows} rows checked, "
        f"{what} {verdict}{digest}"
    )
    raise typer.Exit(0 if report.ok else 1)


@runs_app.command("retry")
def runs_retry(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """Put a failed (dead-lettered) or parked run back in the queue."""
    require_scope("execute", "retry a run")
    client = operator_client(db, tenant)
    run_id = full_run_id(client.store, tenant, run_id)
    if not client.retry(run_id):
        fail(f"run {run_id!r} is not failed or parked (or does not exist)")
    console.print(f"run {run_id} queued again")


@runs_app.command("cancel")
def runs_cancel(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """Cancel a run (at its worker's next step if one holds it)."""
    require_scope("execute", "cancel a run")
    client = operator_client(db, tenant)
    run_id = full_run_id(client.store, tenant, run_id)
    if not client.cancel(run_id):
        fail(f"run {run_id!r} is finished, cancelled or unknown")
    console.print(f"run {run_id}: cancellation requested")


@runs_app.command("bytes")
def runs_bytes(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """Every byte a run wrote: per table and channel, bytes per step, amplification."""
    from wayline.instrument import byte_report

    store = open_store(db)
    run_id = full_run_id(store, tenant, run_id)
    with reported(1):  # a row whose byte counts cannot be read: named, no traceback
        report = byte_report(store, tenant, run_id)
    tables = report.by_table()
    table = Table(title=f"bytes written by run {run_id}")
    for col in ("table", "channel", "bytes", "share"):
        table.add_column(col, justify="right" if col in ("bytes", "share") else "left")
    for (tbl, channel), n in sorted(report.by_channel().items()):
        table.add_row(tbl, channel, f"{n:,}", f"{n / report.total:.1%}")
    for tbl, n in sorted(tables.items()):
        table.add_row(f"[bold]{tbl}[/]", "[bold]all[/]", f"[bold]{n:,}[/]", "")
    console.print(table)
    classes = Table(title="by data class")
    for col in ("class", "bytes", "share"):
        classes.add_column(col, justify="left" if col == "class" else "right")
    for cls, n in sorted(report.by_class().items()):
        classes.add_row(cls, f"{n:,}", f"{n / report.total:.1%}")
    console.print(classes)
    head, tail = report.decile_bytes_per_step()
    steps = report.by_step()
    console.print(
        f"steps {min(steps, default=0)}..{max(steps, default=0)}  total {report.total:,} B  "
        f"payload {report.payload:,} B  write amplification {report.write_amplification:.2f}\n"
        f"bytes/step first tenth {head:,.0f}  last tenth {tail:,.0f}  "
        f"first-to-last ratio {report.first_to_last:.2f}"
    )


@effects_app.command("list")
def effects_list(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """The effect ledger of a run: keys, status, attempts, errors."""
    from wayline.effects.ops import list_effects

    store = open_store(db)
    run_id = full_run_id(store, tenant, run_id)
    table = Table()
    for col in ("key", "node", "step", "name", "status", "attempt", "error"):
        table.add_column(col)
    with reported():
        effects = list_effects(store, tenant, run_id)
    for e in effects:
        if e.kind != "effect":
            continue
        table.add_row(e.key, e.node, str(e.step), e.name, e.status, str(e.attempt), e.error or "")
    console.print(table)
    from wayline.effects.outcomes import DECISION_TABLE

    rules = Table("the effect's function", "what wayline does", title="what an outcome means")
    for what, action in DECISION_TABLE:
        rules.add_row(what, action)
    console.print(rules)


@effects_app.command("resolve")
def effects_resolve(
    run_id: str,
    key: str,
    succeeded: Annotated[bool, typer.Option("--succeeded", help="The provider did it.")] = False,
    failed: Annotated[bool, typer.Option("--failed", help="It did not and will not.")] = False,
    retry: Annotated[bool, typer.Option("--retry", help="Send again under the same key.")] = False,
    result: Annotated[str | None, typer.Option(help="JSON result (with --succeeded).")] = None,
    reason: Annotated[str | None, typer.Option(help="Why (with --failed).")] = None,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
) -> None:
    """Record an operator's finding about an effect whose outcome is unknown or failed."""
    import json

    from wayline.effects.ops import resolve_effect

    chosen = [
        name
        for name, flag in (("succeeded", succeeded), ("failed", failed), ("retry", retry))
        if flag
    ]
    if len(chosen) != 1:
        fail("choose exactly one of --succeeded, --failed, --retry", 2)
    store = open_store(db)
    run_id = full_run_id(store, tenant, run_id)
    with reported():
        value = json.loads(result) if result is not None else None
        rec = resolve_effect(
            store,
            tenant,
            run_id,
            key,
            chosen[0],  # type: ignore[arg-type]
            result=value,
            reason=reason,
            actor=operator_name(),
        )
    console.print(f"effect {key} is now {rec.status}; resume run {run_id} to continue")
