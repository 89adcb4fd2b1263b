"""The ``wayline`` command. The only place that reads environment variables
(``WAYLINE_DB`` as the default store URL)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

import wayline
from wayline.cli.actor import operator_name
from wayline.cli.common import (
    DEFAULT_DB,
    SESSION,
    DbOption,
    TenantOption,
    console,
    fail,
    full_run_id,
    open_store,
    reported,
    require_scope,
)
from wayline.cli.crons import register as register_crons
from wayline.cli.data import register as register_data
from wayline.cli.runs import effects_app, runs_app
from wayline.cli.serve import register as register_server
from wayline.control.audit import audit_operator
from wayline.errors import WaylineError
from wayline.store.urls import redact_url

app = typer.Typer(
    name="wayline",
    help="Durable execution runtime for stateful agent graphs.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(runs_app, name="runs")  # wayline/cli/runs.py
app.add_typer(effects_app, name="effects")
db_app = typer.Typer(help="Manage the store's schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@app.callback()
def _session(
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            envvar="WAYLINE_SCOPE",
            help="What this invocation may do: read, execute (start, resume, approve), admin.",
        ),
    ] = "admin",
) -> None:
    from wayline.control.scopes import check_scope

    with reported(2):
        SESSION["scope"] = check_scope(scope)


@app.command()
def demo(
    db: Annotated[
        Path | None, typer.Option(help="SQLite file to use (default: a fresh temp file).")
    ] = None,
    kill_at_round: Annotated[int, typer.Option(help="Draft round to kill the worker in.")] = 7,
) -> None:
    """Run an agent, SIGKILL its worker mid-run, resume in a fresh process, compare."""
    from wayline.demo.scenes import run_demo

    raise typer.Exit(run_demo(db, kill_at_round, console))


@app.command()
def crashtest(
    trials: Annotated[int, typer.Option(min=1, help="Trials per cell.")] = 5,
    points: Annotated[
        str,
        typer.Option(
            help="Kill points, comma-separated: before_charge, provider_committed, "
            "after_record, after_commit."
        ),
    ] = "before_charge,provider_committed,after_record,after_commit",
    modes: Annotated[str, typer.Option(help="Durability modes: sync, async, exit.")] = (
        "sync,async,exit"
    ),
    strategies: Annotated[
        str,
        typer.Option(help="Key strategies: naive, uuid4, wayline, business (and reconcile)."),
    ] = "naive,uuid4,wayline,business",
    jobs: Annotated[int, typer.Option(min=0, help="Trials run at a time (0: the CPU count).")] = 0,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write every trial's result here.")
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep the trials' files (stores, ledgers).")] = False,
    framework: Annotated[
        str | None,
        typer.Option(
            help="Run the frameworks crash test instead: langgraph, llamaindex, crewai, "
            "wayline (comma-separated), each plain and on wayline, killed before_charge, "
            "after_charge, after_record (--points takes these names then)."
        ),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            help="wayline: the flow on wayline's engine; langgraph: the same flow written "
            "for LangGraph, run by LangGraph's engine on wayline (leased, fenced)."
        ),
    ] = "wayline",
) -> None:
    """The payments crash test: SIGKILL a worker around a charge, resume it, count charges."""
    if framework is not None:
        from wayline.demo.frameworks_report import frameworks_crashtest

        raise typer.Exit(frameworks_crashtest(console, framework, points, trials, json_path, keep))
    from wayline.demo import crashtest as ct
    from wayline.demo.payment_flow import KILL_POINTS, STRATEGIES

    try:
        chosen = {
            "strategies": ct.parse_list(strategies, STRATEGIES, "strategy"),
            "points": ct.parse_list(points, KILL_POINTS, "kill point"),
            "modes": ct.parse_list(modes, ct.MODES, "durability mode"),
        }
    except ValueError as exc:
        fail(str(exc), 2)
    if engine not in ("wayline", "langgraph"):
        fail(f"unknown engine {engine!r}: wayline or langgraph", 2)
    raise typer.Exit(
        ct.run_crashtest(
            console,
            **chosen,
            trials=trials,
            jobs=jobs or os.cpu_count() or 1,
            json_path=json_path,
            keep=keep,
            engine=engine,
        )
    )


@app.command()
def killtest(
    graph: Annotated[str, typer.Argument(help="Your graph: module:attribute or file.py:attr.")],
    db: DbOption = "sqlite:///wayline-killtest.db",
    input: Annotated[str, typer.Option("--input", help="The run's input, as JSON.")] = "{}",
    trials: Annotated[int, typer.Option(min=1, help="Trials per durability mode.")] = 20,
    modes: Annotated[str, typer.Option(help="Durability modes: sync, async, exit.")] = (
        "sync,async,exit"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the kill schedule.")] = 0,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write every trial's result here.")
    ] = None,
    kill_db: Annotated[
        bool,
        typer.Option(
            "--kill-db",
            help="Also kill the database server (--db embedded-postgres[?synchronous_commit=off]).",
        ),
    ] = False,
    runs: Annotated[int, typer.Option(min=1, help="Runs one worker holds when killed.")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="That worker's concurrency.")] = 1,
    tenant: TenantOption = "default",
    keep: Annotated[bool, typer.Option(help="Keep the test's runs in the store.")] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Per trial also: ran, unknown, replayed, resent, status."
        ),
    ] = False,
) -> None:
    """SIGKILL your graph's worker at node boundaries and random moments, resume it, and
    count executions the committed history missed, effects done twice, and state drift."""
    from wayline.cli import killtest as kt

    require_scope("admin", "run the kill test (it starts runs and purges them)")

    try:
        chosen = [m.strip() for m in modes.split(",") if m.strip()]
        bad = sorted(set(chosen) - set(kt.MODES))
        if bad or not chosen:
            raise ValueError(f"unknown durability mode(s) {bad}; choose from {list(kt.MODES)}")
    except ValueError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None
    raise typer.Exit(
        kt.run_killtest(
            console,
            graph=graph,
            db=db,
            input=input,
            trials=trials,
            modes=chosen,
            seed=seed,
            json_path=json_path,
            kill_db=kill_db,
            runs=runs,
            concurrency=max(concurrency, 1),
            tenant=tenant,
            keep=keep,
            verbose=verbose,
        )
    )


@app.command()
def worker(
    graphs: Annotated[
        list[str] | None,
        typer.Argument(help="Graphs to serve, as module:attribute (or file.py:attr)."),
    ] = None,
    db: DbOption = DEFAULT_DB,
    concurrency: Annotated[
        int,
        typer.Option(min=1, help="Runs executed at once, by the command's processes together."),
    ] = 1,
    lease: Annotated[float, typer.Option(help="Lease seconds (heartbeat every third).")] = 30.0,
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 1.0,
    tenant: Annotated[str | None, typer.Option(help="Serve only this tenant.")] = None,
    processes: Annotated[
        str,
        typer.Option(
            help="Worker processes sharing the --concurrency slots: one process runs Python "
            "on one core at a time, so graphs that compute go faster with one per core. "
            "'auto': on a SQLite file, one a CPU the worker may use while each gets 4 slots "
            "or more (--concurrency 8 on two CPUs: two processes of 4); on PostgreSQL, one.",
        ),
    ] = "auto",
    cpus: Annotated[
        str,
        typer.Option(
            help="CPUs the worker's threads run on (Linux): a list such as 0, 0,2 or 0-3 "
            "(of several processes, each takes one of them in turn); 'auto': each "
            "process on one CPU (of several, each a CPU of its own; alone, the least "
            "busy; auto:N, starting on CPU N), and on another when other programs keep "
            "that one busy; 'all': "
            "wherever the OS schedules them. Slots hand the GIL to each other every step, "
            "which costs less on one core.",
        ),
    ] = "auto",
    webhook: Annotated[
        str | None,
        typer.Option(help="POST approval requests, run ends and parked effects here."),
    ] = None,
    webhook_secret: Annotated[
        str | None,
        typer.Option(envvar="WAYLINE_WEBHOOK_SECRET", help="HMAC key signing each POST."),
    ] = None,
    config_file: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="An app's langgraph.json: serve the graphs it names, with its env and "
            "dependencies (as wayline serve --config).",
        ),
    ] = None,
    verify_rate: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Finished runs to verify a minute, in turn (reconstructed and compared with "
            "the digest each committed; a divergence is audited and on the dashboard). 0: none.",
        ),
    ] = 0.0,
    metrics_every: Annotated[
        float,
        typer.Option(
            min=0.05,
            help="Seconds between flushes of the worker's metrics to the store (the "
            "dashboard's health page reads them).",
        ),
    ] = 10.0,
    one_thread: Annotated[
        bool,
        typer.Option(
            "--one-thread",
            help="Drive each process's slots from one thread (greenlets that yield at their "
            "step commits): no GIL hand-offs, every ready step in one commit, but a node that "
            "blocks holds up the others. For graphs whose nodes compute or return quickly; "
            "needs wayline[one-thread].",
        ),
    ] = False,
) -> None:
    """Claim and execute runs of the given graphs until SIGTERM or SIGINT."""
    explicit = list(graphs or [])
    app_specs, memory = _app_graphs(config_file)
    graphs = explicit + app_specs
    if not graphs:
        fail("name the graphs to serve (module:attribute), or an app's --config langgraph.json", 2)
    from wayline.cli.loading import check_importable, load_engine
    from wayline.cli.logs import log_to_stderr
    from wayline.cli.signals import stop_on_signals
    from wayline.cli.worker_processes import (
        cpu_list,
        place_workers,
        process_count,
        run_processes,
        split_slots,
    )
    from wayline.worker import Worker, WorkerConfig
    from wayline.worker.affinity import pin_this_thread
    from wayline.worker.notify import WebhookNotifier

    require_scope("execute", "run a worker")
    with reported(2):
        count = process_count(processes, concurrency, cpus, db)
        placed = place_workers(cpus, count)
    if count > 1:
        options = ["--db", db, "--lease", str(lease), "--poll", str(poll), "--processes", "1"]
        options += ["--tenant", tenant] if tenant else []
        options += ["--verify-rate", str(verify_rate), "--metrics-every", str(metrics_every)]
        options += ["--one-thread"] if one_thread else []
        options += (
            ["--webhook", webhook, "--webhook-secret", webhook_secret or ""] if webhook else []
        )
        options += ["--config", config_file] if config_file else []  # each reads it again
        slots = split_slots(concurrency, count)
        each = [
            [*explicit, *options, "--concurrency", str(n), "--cpus", cpu_list(place)]
            for place, n in zip(placed, slots, strict=True)
        ]
        shares = "/".join(map(str, sorted(set(slots), reverse=True)))
        how = "one a CPU (--processes auto)" if processes == "auto" else "--processes"
        console.print(f"{count} worker processes of {shares} slots each, {how}:")
        raise typer.Exit(run_processes(SESSION["scope"], each))
    pinned = placed[0]
    if isinstance(pinned, frozenset):  # the whole process: threads the store starts
        pin_this_thread(pinned)  # inherit it
    with reported(2):  # a graph that does not import leaves no database file behind
        for spec in graphs:
            check_importable(spec)
    store = open_store(db, create=True)
    with reported(2):
        compiled = [load_engine(spec, store) for spec in graphs]
        if memory is not None:  # the app's long-term store, for its LangGraph graphs
            for engine in compiled:
                if getattr(engine, "kind", None) == "langgraph":
                    engine.memory = memory  # type: ignore[attr-defined]
    if webhook and not webhook_secret:
        fail("--webhook needs --webhook-secret (or WAYLINE_WEBHOOK_SECRET): it signs each POST", 2)
    config = WorkerConfig(
        concurrency=concurrency,
        lease_seconds=lease,
        poll_interval=poll,
        tenant=tenant,
        notifier=WebhookNotifier(url=webhook, secret=webhook_secret or "") if webhook else None,
        cpus=pinned if isinstance(pinned, frozenset) or pinned is None else "auto",
        verify_rate=verify_rate,
        metrics_every=metrics_every,
        one_thread=one_thread,
    )
    with reported(2):  # one_thread without greenlet: said here, before anything runs
        w = Worker(store, compiled, config)
    stop_on_signals(w.stop)
    log_to_stderr()
    names = ", ".join(f"{name}@{version}" for name, version in sorted(w.graphs))
    where = redact_url(db)
    on = f", CPU {','.join(map(str, sorted(pinned)))}" if isinstance(pinned, frozenset) else ""
    if w.placement is not None:
        first = w.placement.start(at=pinned if isinstance(pinned, int) else None)
        w.placement.take_process()  # the whole process moves, as it was pinned
        on = f", CPU {first}, left when others keep it busy"
    on += ", one thread" if one_thread else ""
    console.print(f"worker {w.owner} serving {names} on {where} (concurrency {concurrency}{on})")
    w.run()
    g = w.group.stats
    console.print(
        f"worker {w.owner} stopped after {w.completed} run executions "
        f"({g.commits} step commits in {g.transactions} transactions)"
    )
    store.close()  # its listener for new work (SQLite: wayline.store.wake) leaves with it


def _app_graphs(config_file: str | None) -> tuple[list[str], Any]:
    """The graphs of an app's ``langgraph.json`` (its env and dependencies applied here and
    passed on to worker processes through the environment), and its long-term store
    (``AppConfig.memory``; None: it names none)."""
    if config_file is None:
        return [], None
    from wayline.cli.app_config import read_app_config

    with reported(2):
        app_config = read_app_config(config_file)
    app_config.apply()
    if app_config.paths:
        given = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([*app_config.paths, *([given] if given else [])])
    with reported(2):
        memory = app_config.memory()
    return list(app_config.graphs.values()), memory


@app.command()
def version() -> None:
    """Print wayline's version."""
    console.print(wayline.__version__)


@app.command()
def approve(
    run_id: str,
    actor: Annotated[str, typer.Option(help="Who decides (an actor id).")],
    role: Annotated[list[str] | None, typer.Option(help="A role the actor holds (repeat).")] = None,
    digest: Annotated[
        str | None, typer.Option(help="Digest of the proposal decided on (shown without it).")
    ] = None,
    yes: Annotated[
        bool, typer.Option("--approve", help='Approve: the decision {"approved": true}.')
    ] = False,
    no: Annotated[
        bool, typer.Option("--reject", help='Reject: the decision {"approved": false}.')
    ] = False,
    decision: Annotated[str | None, typer.Option(help="Any other decision, as JSON.")] = None,
    interrupt_id: Annotated[str | None, typer.Option(help="Which question, if several.")] = None,
    db: DbOption = DEFAULT_DB,
    tenant: TenantOption = "default",
) -> None:
    """Decide a run's pending approval as an actor; without --digest, show what waits.

    The decision is never implied: give exactly one of --approve, --reject, --decision JSON.
    """
    import json

    from wayline.client import Wayline
    from wayline.control import Actor

    store = open_store(db)
    run_id = full_run_id(store, tenant, run_id)
    client = Wayline(store, tenant=tenant, scope=SESSION["scope"])  # type: ignore[arg-type]
    with reported():
        chosen = [
            c for c, given in (("approve", yes), ("reject", no), ("decision", decision)) if given
        ]
        if digest is None:  # show what waits; asking is not an error, deciding blind is
            questions = client.pending(run_id)
            for question in questions:
                who_may = list(question.approvers or ["anyone"])
                console.print(
                    f"{question.id}: {json.dumps(question.value, default=str)}\n"
                    f"  approvers {who_may}, digest {question.digest}"
                )
            if not questions:
                console.print(f"run {run_id} has no question waiting for a decision")
            else:
                console.print(
                    "decide with --digest DIGEST (the proposal you looked at) and one of "
                    "--approve, --reject, --decision JSON"
                )
            raise typer.Exit(2 if chosen else 0)
        if len(chosen) != 1:
            fail("give exactly one of --approve, --reject, --decision JSON: nothing was decided", 2)
        value = {"approved": yes} if decision is None else json.loads(decision)
        who = Actor(id=actor, roles=tuple(role or ()), tenant=tenant)
        client.resume(run_id, value, actor=who, digest=digest, interrupt_id=interrupt_id)
    console.print(f"run {run_id}: decision recorded; a worker (or invoke(None)) continues it")


@db_app.command("upgrade")
def db_upgrade(
    db: DbOption = DEFAULT_DB,
    rls: Annotated[
        bool, typer.Option("--rls", help="PostgreSQL: enable row-level security per tenant.")
    ] = False,
) -> None:
    """Apply the schema migrations the store lacks (safe with workers running). A store it
    must not touch (a newer wayline's, a damaged one, someone else's) is refused, exit 2."""
    store = open_store(db, upgrade=True, create=True)
    console.print(f"{redact_url(db)}: schema version {store.schema_version()}, up to date")
    if rls:
        enable = getattr(store, "enable_rls", None)
        if enable is None:
            fail("row-level security is a PostgreSQL feature", 2)
        with reported():
            tables = enable()
        console.print(f"row-level security on {len(tables)} tables: {', '.join(tables)}")


@db_app.command("grant")
def db_grant(
    role: Annotated[str, typer.Argument(help="An existing PostgreSQL role.")],
    scope: Annotated[str, typer.Option(help="read, execute or admin.")],
    db: DbOption = DEFAULT_DB,
) -> None:
    """PostgreSQL: give a role the privileges of a scope on the store's tables."""
    require_scope("admin", "grant a scope")
    store = open_store(db)
    grant = getattr(store, "grant_scope", None)
    if grant is None:
        fail("roles with scopes are a PostgreSQL feature", 2)
    with reported():
        statements = grant(role, scope)
        audit_operator(
            store, "default", operator_name(), "db.grant", "granted", role=role, scope=scope
        )
    console.print(f"granted {scope} to {role}: {len(statements)} statements")


def main() -> None:
    """The command line. A typed wayline error a command did not report itself (a damaged
    row met while showing a run, say) ends it as one red line and exit 1, never a
    traceback: its message says what happened and what to do."""
    try:
        app()
    except WaylineError as exc:
        console.print(f"[red]{escape(str(exc))}[/]", highlight=False)
        sys.exit(1)


register_server(app)  # wayline serve, wayline keys (wayline/cli/serve.py)
register_crons(app)  # wayline crons (wayline/cli/crons.py)
register_data(app)  # wayline export, purge, retention, store (wayline/cli/data.py)


if __name__ == "__main__":
    main()
