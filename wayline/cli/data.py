"""The data commands: ``wayline export``, ``purge``, ``retention apply`` and ``store
report`` (what is held, by tenant and data class, and what leaves when)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from wayline.cli.actor import operator_name
from wayline.cli.common import (
    DEFAULT_DB,
    SESSION,
    DbOption,
    TenantOption,
    check_statuses,
    console,
    fail,
    full_run_id,
    open_store,
    reported,
    require_scope,
    when,
)
from wayline.control.audit import audit_operator

__all__ = ["register"]

retention_app = typer.Typer(help="Retention by data class.", no_args_is_help=True)
store_app = typer.Typer(help="What the store holds.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the data commands to ``app``."""
    app.command()(export)
    app.command()(purge)
    app.add_typer(retention_app, name="retention")
    app.add_typer(store_app, name="store")


def export(
    run_id: Annotated[str | None, typer.Argument(help="The run to export.")] = None,
    subject: Annotated[
        str | None, typer.Option(help="Export every run of this data subject instead.")
    ] = None,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
    out: Annotated[Path | None, typer.Option(help="Write JSON here (default: stdout).")] = None,
) -> None:
    """Everything held for a run (or a data subject's runs), decoded, as JSON."""
    import json

    from wayline.client import Wayline

    if (run_id is None) == (subject is None):
        fail("give a RUN_ID or --subject, not both", 2)
    store = open_store(db)
    if run_id is not None:
        run_id = full_run_id(store, tenant, run_id)
    client = Wayline(store, tenant=tenant, scope=SESSION["scope"])  # type: ignore[arg-type]
    with reported():
        data = client.export(run_id) if run_id is not None else client.export_subject(subject or "")
    text = json.dumps(data, indent=2, sort_keys=True)
    if out is None:
        print(text)
    else:
        out.write_text(text)
        console.print(f"wrote {out} ({len(text):,} bytes)")


def purge(
    run_id: Annotated[str | None, typer.Argument(help="One run to erase.")] = None,
    older_than: Annotated[
        str | None, typer.Option(help="Erase finished runs not updated for this long: 30d, 12h.")
    ] = None,
    status: Annotated[
        str, typer.Option(help="With --older-than: statuses to purge, comma separated.")
    ] = "done,failed,cancelled",
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="With --older-than: list what would go, erase nothing."),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --older-than: erase without asking again.")
    ] = False,
    subject: Annotated[
        str | None, typer.Option(help="Erase this data subject from all its runs (needs --yes).")
    ] = None,
    classes: Annotated[
        list[str] | None,
        typer.Option("--class", help="With --subject: redact only this class (repeat)."),
    ] = None,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
) -> None:
    """Erase a run, or apply a retention policy: every row, and blobs no other run uses.

    A bulk purge (--older-than) lists the runs it matches and erases them only with --yes;
    --dry-run lists them and stops.
    """
    from wayline.client import Wayline
    from wayline.control.retention import parse_age

    if sum(x is not None for x in (run_id, older_than, subject)) != 1:
        fail("give one of RUN_ID, --older-than or --subject", 2)
    require_scope("admin", "purge or erase")
    client = Wayline(open_store(db), tenant=tenant, operator=operator_name())
    if subject is not None:
        import json

        runs = client.store.runs_of_subject(tenant, subject)
        what = f"{'class ' + ','.join(classes) if classes else 'every row'} of {len(runs)} run(s)"
        what += " and of its long-term memory items"
        if not yes:
            fail(f"would erase {what} of subject {subject}: add --yes (nothing was erased)", 2)
        with reported():
            receipt = client.erase_subject(subject, classes=classes or None)
        console.print(json.dumps(receipt, sort_keys=True), highlight=False)
        return
    if run_id is not None:
        run_id = full_run_id(client.store, tenant, run_id)
        deleted = client.purge(run_id)
        if not deleted:
            fail(f"no run {run_id!r} for tenant {tenant!r}")
        console.print(f"purged run {run_id}: {deleted} rows")
        return
    statuses = [s.strip() for s in status.split(",") if s.strip()]
    check_statuses(statuses)
    with reported(2):
        age = parse_age(older_than or "")
    with reported():
        matched = client.purge_older_than(age, statuses=statuses, dry_run=True)
    for rid in matched:
        console.print(f"  {rid}")
    what = (
        f"{len(matched)} run(s) of tenant {tenant} in {','.join(statuses)} older than {older_than}"
    )
    if dry_run or not matched:
        console.print(f"would purge {what}" if dry_run else f"nothing to purge: {what}")
        return
    if not yes:
        fail(f"would purge {what}: run again with --yes to erase them (nothing was erased)", 2)
    with reported():
        purged = client.purge_older_than(age, statuses=statuses)
    console.print(f"purged {len(purged)} run(s) of tenant {tenant} older than {older_than}")


@retention_app.command("apply")
def retention_apply(
    policy: Annotated[
        str,
        typer.Option(help="Rules by class: pii=30d:redact,default=365d:purge,memory.pii=90d:purge"),
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what it would do.")] = False,
    db: DbOption = DEFAULT_DB,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant (default: all).")] = None,
) -> None:
    """Apply a retention policy by data class to finished runs: redact or purge what is due."""
    from wayline.control.policy import DataPolicy, apply_policy

    require_scope("admin", "apply a retention policy")
    with reported(2):
        rules = DataPolicy.parse(policy)
    store = open_store(db)
    with reported():
        actions = apply_policy(store, rules, tenant_id=tenant, dry_run=dry_run)
        if not dry_run:
            for t in sorted({a["tenant"] for a in actions} | ({tenant} if tenant else set())):
                mine = [a for a in actions if a["tenant"] == t]
                audit_operator(
                    store,
                    t,
                    operator_name(),
                    "retention.apply",
                    "failed" if any(a["action"] == "failed" for a in mine) else "applied",
                    policy=policy,
                    runs=[f"{a['run_id']}:{a['action']}" for a in mine],
                )
    for a in actions:
        what = (
            f"[red]{escape(a['error'])}[/]" if a["action"] == "failed" else ",".join(a["classes"])
        )
        if a.get("target") == "memory":
            rows = ", ".join(f"{n} {t}" for t, n in sorted(a["rows"].items()))
            what = f"{what} ({rows})"
        where = a["run_id"] or "memory"
        console.print(f"  {a['tenant']}/{where}: {a['action']} {what}", highlight=False)
    failed = sum(a["action"] == "failed" for a in actions)
    runs = sum(a.get("target") != "memory" for a in actions) - failed
    classes = len(actions) - failed - runs
    acted = "would act on" if dry_run else "acted on"
    console.print(
        f"{acted} {runs} run(s)" + (f" and {classes} memory class(es)" if classes else "")
    )
    if failed:
        fail(f"{failed} run(s) could not be read, so the policy was not applied to them")


@store_app.command("report")
def store_report(
    policy: Annotated[
        str | None, typer.Option(help="Show what this policy does next: pii=30d:redact,...")
    ] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Per tenant and data class: runs, rows, bytes, the oldest value, the policy's next step."""
    from wayline.control.policy import DataPolicy
    from wayline.instrument_classes import store_report as build

    store = open_store(db)
    with reported(2):
        rules = DataPolicy.parse(policy) if policy else None
    with reported():
        rows = build(store, rules)
    table = Table(title="store by tenant and data class")
    for col in ("tenant", "class", "runs", "rows", "bytes", "oldest", "next"):
        table.add_column(col, justify="right" if col in ("runs", "rows", "bytes") else "left")
    for r in rows:
        table.add_row(
            r.tenant, r.cls, str(r.runs), str(r.rows), f"{r.bytes:,}", when(r.oldest), r.next
        )
    console.print(table)
