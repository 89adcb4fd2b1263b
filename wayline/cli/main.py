"""The ``wayline`` command. The only place that reads environment variables
(``WAYLINE_DB`` as the default store URL)."""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import wayline
from wayline.cli.actor import operator_name
from wayline.cli.crons import register as register_crons
from wayline.cli.serve import register as register_server
from wayline.control.audit import audit_operator
from wayline.errors import WaylineError
from wayline.store.records import RUN_STATUSES
from wayline.store.urls import redact_url

app = typer.Typer(
    name="wayline",
    help="Durable execution runtime for stateful agent graphs.",
    no_args_is_help=True,
    add_completion=False,
)
runs_app = typer.Typer(help="Inspect runs in a store.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
effects_app = typer.Typer(help="Inspect and resolve a run's effects.", no_args_is_help=True)
app.add_typer(effects_app, name="effects")
db_app = typer.Typer(help="Manage the store's schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")
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

    with _reported(2):
        SESSION["scope"] = check_scope(scope)


def _require(need: str, what: str) -> None:
    """Exit 1 with the ScopeError's message when this invocation's scope is too low."""
    from wayline.control.scopes import require

    with _reported():
        require(SESSION["scope"], need, what)  # type: ignore[arg-type]


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
        _fail(str(exc), 2)
    if engine not in ("wayline", "langgraph"):
        _fail(f"unknown engine {engine!r}: wayline or langgraph", 2)
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

    _require("admin", "run the kill test (it starts runs and purges them)")

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
    concurrency: Annotated[int, typer.Option(help="Runs executed at once.")] = 1,
    lease: Annotated[float, typer.Option(help="Lease seconds (heartbeat every third).")] = 30.0,
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 1.0,
    tenant: Annotated[str | None, typer.Option(help="Serve only this tenant.")] = None,
    processes: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes, each with --concurrency slots: one process runs Python "
            "on one core at a time, so CPU-light graphs go faster with one per core.",
        ),
    ] = 1,
    cpus: Annotated[
        str,
        typer.Option(
            help="CPUs the worker's threads run on (Linux): a list such as 0, 0,2 or 0-3 "
            "(with --processes, each process takes one of them in turn); 'auto': each "
            "process on one CPU (with --processes, a CPU of its own; alone, the least "
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
) -> None:
    """Claim and execute runs of the given graphs until SIGTERM or SIGINT."""
    graphs = list(graphs or []) + _app_graphs(config_file)
    if not graphs:
        _fail("name the graphs to serve (module:attribute), or an app's --config langgraph.json", 2)
    from wayline.cli.loading import check_importable, load_engine
    from wayline.cli.logs import log_to_stderr
    from wayline.cli.signals import stop_on_signals
    from wayline.worker import Worker, WorkerConfig
    from wayline.worker.affinity import pin_this_thread
    from wayline.worker.notify import WebhookNotifier

    _require("execute", "run a worker")
    with _reported(2):
        placed = _place_workers(cpus, processes)
    if processes > 1:
        options = ["--db", db, "--concurrency", str(concurrency), "--lease", str(lease)]
        options += ["--poll", str(poll)] + (["--tenant", tenant] if tenant else [])
        options += ["--verify-rate", str(verify_rate), "--metrics-every", str(metrics_every)]
        options += (
            ["--webhook", webhook, "--webhook-secret", webhook_secret or ""] if webhook else []
        )
        each = [[*graphs, *options, "--cpus", _cpu_list(place)] for place in placed]
        raise typer.Exit(_worker_processes(each))
    pinned = placed[0]
    if isinstance(pinned, frozenset):  # the whole process: threads the store starts
        pin_this_thread(pinned)  # inherit it
    with _reported(2):  # a graph that does not import leaves no database file behind
        for spec in graphs:
            check_importable(spec)
    store = _open(db, create=True)
    with _reported(2):
        compiled = [load_engine(spec, store) for spec in graphs]
    if webhook and not webhook_secret:
        _fail("--webhook needs --webhook-secret (or WAYLINE_WEBHOOK_SECRET): it signs each POST", 2)
    config = WorkerConfig(
        concurrency=concurrency,
        lease_seconds=lease,
        poll_interval=poll,
        tenant=tenant,
        notifier=WebhookNotifier(url=webhook, secret=webhook_secret or "") if webhook else None,
        cpus=pinned if isinstance(pinned, frozenset) or pinned is None else "auto",
        verify_rate=verify_rate,
        metrics_every=metrics_every,
    )
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
    console.print(f"worker {w.owner} serving {names} on {where} (concurrency {concurrency}{on})")
    w.run()
    g = w.group.stats
    console.print(
        f"worker {w.owner} stopped after {w.completed} run executions "
        f"({g.commits} step commits in {g.transactions} transactions)"
    )


def _app_graphs(config_file: str | None) -> list[str]:
    """The graphs of an app's ``langgraph.json`` (its env and dependencies applied here and
    passed on to worker processes through the environment)."""
    if config_file is None:
        return []
    from wayline.cli.app_config import read_app_config

    with _reported(2):
        app_config = read_app_config(config_file)
    app_config.apply()
    if app_config.paths:
        given = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([*app_config.paths, *([given] if given else [])])
    return list(app_config.graphs.values())


Placed = frozenset[int] | int | Literal["auto"] | None
"""Where one worker process runs (``wayline.worker.affinity``): on fixed CPUs; placed on one
CPU that changes when others keep it busy (``wayline.worker.placement``), starting on the
CPU given (an int) or on the least busy (``"auto"``); or left to the OS (None)."""


def _place_workers(cpus: str, processes: int) -> list[Placed]:
    """Where each worker process runs. ``auto`` places each of several processes, starting
    on an allowed CPU of its own, in turn (``auto:N``, what each is handed: starting on CPU
    N), and a lone process starting on the least busy CPU; a list pins, each of several
    processes to one CPU of it in turn. Checked here, once, before any process starts."""
    from wayline.errors import ConfigError
    from wayline.worker.affinity import allowed_cpus, check_cpus, parse_cpus

    if cpus == "all":
        return [None] * processes
    if cpus.startswith("auto:") and processes == 1:
        first = cpus.removeprefix("auto:")
        if not first.isdigit():
            raise ConfigError(f"--cpus {cpus!r}: write auto:N with N a CPU number, or auto")
        (cpu,) = check_cpus({int(first)})
        return [cpu]
    if cpus == "auto":
        if processes == 1:
            return ["auto"]
        if not hasattr(os, "sched_setaffinity"):
            return [None] * processes
        ordered = allowed_cpus()
        if len(ordered) < 2:
            return [None] * processes  # nothing to spread them over
        return [ordered[i % len(ordered)] for i in range(processes)]
    chosen = parse_cpus(cpus)
    if processes == 1:
        return [chosen]
    ordered = sorted(chosen)
    return [frozenset({ordered[i % len(ordered)]}) for i in range(processes)]


def _cpu_list(place: Placed) -> str:
    """A child process's ``--cpus``."""
    if place is None:
        return "all"
    if place == "auto":
        return place
    if isinstance(place, int):
        return f"auto:{place}"
    return ",".join(map(str, sorted(place)))


def _worker_processes(each: list[list[str]]) -> int:
    """Run one worker process per argument list in ``each`` until they stop; SIGTERM and
    SIGINT go to each (a graceful stop: held runs finish their step and are released), and
    one that fails stops the others, so the command never runs on with part of its workers.
    The exit code is that of the first to fail (0 when none did)."""
    import signal
    import subprocess
    import sys
    import threading

    from wayline.worker.worker import SIGNAL_SLICE

    command = [sys.executable, "-m", "wayline.cli.main", "--scope", SESSION["scope"], "worker"]
    children = [subprocess.Popen([*command, *args]) for args in each]
    exited = threading.Event()

    def forward(signum: int, _frame: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    def watch(child: subprocess.Popen[bytes]) -> None:
        child.wait()
        exited.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    for child in children:
        threading.Thread(target=watch, args=(child,), daemon=True).start()
    first_failure = 0
    while any(child.poll() is None for child in children):
        exited.wait(SIGNAL_SLICE)  # timed: a signal caught by a watcher thread still runs
        exited.clear()
        failed = [child.returncode for child in children if child.returncode]
        if failed and not first_failure:
            first_failure = abs(failed[0])
            forward(signal.SIGTERM, None)
    failed = [abs(child.returncode) for child in children if child.returncode]
    return first_failure or (failed[0] if failed else 0)


@app.command()
def version() -> None:
    """Print wayline's version."""
    console.print(wayline.__version__)


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
        _check_statuses([status])
    store = _open(db)
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
            _when(run.updated_at, seconds=False),
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
    store = _open(db)
    run_id = _run_id(store, tenant, run_id)
    run = store.get_run(tenant, run_id)
    if run is None:
        _fail(f"no run {run_id!r} for tenant {tenant!r}")
    table = Table(show_header=False)
    for field in run.__dataclass_fields__:
        value = getattr(run, field)
        if field == "shape":  # the fingerprint stands for it; the JSON is for diagnostics
            continue
        if field.endswith("_at") and isinstance(value, float):
            value = _when(value)
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
            f"since {_when(run.updated_at)}",
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

    store = _open(db)
    run_id = _run_id(store, tenant, run_id)
    with _reported():
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
    _require("execute", "retry a run")
    client = _client(db, tenant)
    run_id = _run_id(client.store, tenant, run_id)
    if not client.retry(run_id):
        _fail(f"run {run_id!r} is not failed or parked (or does not exist)")
    console.print(f"run {run_id} queued again")


@runs_app.command("cancel")
def runs_cancel(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """Cancel a run (at its worker's next step if one holds it)."""
    _require("execute", "cancel a run")
    client = _client(db, tenant)
    run_id = _run_id(client.store, tenant, run_id)
    if not client.cancel(run_id):
        _fail(f"run {run_id!r} is finished, cancelled or unknown")
    console.print(f"run {run_id}: cancellation requested")


@runs_app.command("bytes")
def runs_bytes(run_id: str, db: DbOption = DEFAULT_DB, tenant: TenantOption = "default") -> None:
    """Every byte a run wrote: per table and channel, bytes per step, amplification."""
    from wayline.instrument import byte_report

    store = _open(db)
    run_id = _run_id(store, tenant, run_id)
    with _reported(1):  # a row whose byte counts cannot be read: named, no traceback
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

    store = _open(db)
    run_id = _run_id(store, tenant, run_id)
    table = Table()
    for col in ("key", "node", "step", "name", "status", "attempt", "error"):
        table.add_column(col)
    with _reported():
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
        _fail("choose exactly one of --succeeded, --failed, --retry", 2)
    store = _open(db)
    run_id = _run_id(store, tenant, run_id)
    with _reported():
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

    store = _open(db)
    run_id = _run_id(store, tenant, run_id)
    client = Wayline(store, tenant=tenant, scope=SESSION["scope"])  # type: ignore[arg-type]
    with _reported():
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
            _fail(
                "give exactly one of --approve, --reject, --decision JSON: nothing was decided", 2
            )
        value = {"approved": yes} if decision is None else json.loads(decision)
        who = Actor(id=actor, roles=tuple(role or ()), tenant=tenant)
        client.resume(run_id, value, actor=who, digest=digest, interrupt_id=interrupt_id)
    console.print(f"run {run_id}: decision recorded; a worker (or invoke(None)) continues it")


@app.command()
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
        _fail("give a RUN_ID or --subject, not both", 2)
    store = _open(db)
    if run_id is not None:
        run_id = _run_id(store, tenant, run_id)
    client = Wayline(store, tenant=tenant, scope=SESSION["scope"])  # type: ignore[arg-type]
    with _reported():
        data = client.export(run_id) if run_id is not None else client.export_subject(subject or "")
    text = json.dumps(data, indent=2, sort_keys=True)
    if out is None:
        print(text)
    else:
        out.write_text(text)
        console.print(f"wrote {out} ({len(text):,} bytes)")


@app.command()
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
        _fail("give one of RUN_ID, --older-than or --subject", 2)
    _require("admin", "purge or erase")
    client = Wayline(_open(db), tenant=tenant, operator=operator_name())
    if subject is not None:
        import json

        runs = client.store.runs_of_subject(tenant, subject)
        what = f"{'class ' + ','.join(classes) if classes else 'every row'} of {len(runs)} run(s)"
        what += " and of its long-term memory items"
        if not yes:
            _fail(f"would erase {what} of subject {subject}: add --yes (nothing was erased)", 2)
        with _reported():
            receipt = client.erase_subject(subject, classes=classes or None)
        console.print(json.dumps(receipt, sort_keys=True), highlight=False)
        return
    if run_id is not None:
        run_id = _run_id(client.store, tenant, run_id)
        deleted = client.purge(run_id)
        if not deleted:
            _fail(f"no run {run_id!r} for tenant {tenant!r}")
        console.print(f"purged run {run_id}: {deleted} rows")
        return
    statuses = [s.strip() for s in status.split(",") if s.strip()]
    _check_statuses(statuses)
    with _reported(2):
        age = parse_age(older_than or "")
    with _reported():
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
        _fail(f"would purge {what}: run again with --yes to erase them (nothing was erased)", 2)
    with _reported():
        purged = client.purge_older_than(age, statuses=statuses)
    console.print(f"purged {len(purged)} run(s) of tenant {tenant} older than {older_than}")


retention_app = typer.Typer(help="Retention by data class.", no_args_is_help=True)
app.add_typer(retention_app, name="retention")
store_app = typer.Typer(help="What the store holds.", no_args_is_help=True)
app.add_typer(store_app, name="store")


@retention_app.command("apply")
def retention_apply(
    policy: Annotated[str, typer.Option(help="Rules by class: pii=30d:redact,default=365d:purge")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what it would do.")] = False,
    db: DbOption = DEFAULT_DB,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant (default: all).")] = None,
) -> None:
    """Apply a retention policy by data class to finished runs: redact or purge what is due."""
    from wayline.control.policy import DataPolicy, apply_policy

    _require("admin", "apply a retention policy")
    with _reported(2):
        rules = DataPolicy.parse(policy)
    store = _open(db)
    with _reported():
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
        console.print(f"  {a['tenant']}/{a['run_id']}: {a['action']} {what}", highlight=False)
    failed = sum(a["action"] == "failed" for a in actions)
    console.print(f"{'would act on' if dry_run else 'acted on'} {len(actions) - failed} run(s)")
    if failed:
        _fail(f"{failed} run(s) could not be read, so the policy was not applied to them")


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

    store = _open(db)
    with _reported(2):
        rules = DataPolicy.parse(policy) if policy else None
    with _reported():
        rows = build(store, rules)
    table = Table(title="store by tenant and data class")
    for col in ("tenant", "class", "runs", "rows", "bytes", "oldest", "next"):
        table.add_column(col, justify="right" if col in ("runs", "rows", "bytes") else "left")
    for r in rows:
        table.add_row(
            r.tenant, r.cls, str(r.runs), str(r.rows), f"{r.bytes:,}", _when(r.oldest), r.next
        )
    console.print(table)


@db_app.command("upgrade")
def db_upgrade(
    db: DbOption = DEFAULT_DB,
    rls: Annotated[
        bool, typer.Option("--rls", help="PostgreSQL: enable row-level security per tenant.")
    ] = False,
) -> None:
    """Apply the schema migrations the store lacks (safe with workers running). A store it
    must not touch (a newer wayline's, a damaged one, someone else's) is refused, exit 2."""
    store = _open(db, upgrade=True, create=True)
    console.print(f"{redact_url(db)}: schema version {store.schema_version()}, up to date")
    if rls:
        enable = getattr(store, "enable_rls", None)
        if enable is None:
            _fail("row-level security is a PostgreSQL feature", 2)
        with _reported():
            tables = enable()
        console.print(f"row-level security on {len(tables)} tables: {', '.join(tables)}")


@db_app.command("grant")
def db_grant(
    role: Annotated[str, typer.Argument(help="An existing PostgreSQL role.")],
    scope: Annotated[str, typer.Option(help="read, execute or admin.")],
    db: DbOption = DEFAULT_DB,
) -> None:
    """PostgreSQL: give a role the privileges of a scope on the store's tables."""
    _require("admin", "grant a scope")
    store = _open(db)
    grant = getattr(store, "grant_scope", None)
    if grant is None:
        _fail("roles with scopes are a PostgreSQL feature", 2)
    with _reported():
        statements = grant(role, scope)
        audit_operator(
            store, "default", operator_name(), "db.grant", "granted", role=role, scope=scope
        )
    console.print(f"granted {scope} to {role}: {len(statements)} statements")


def _open(url: str, *, upgrade: bool = False, create: bool = False) -> wayline.Store:
    """Open the store, or exit 2 with the reason. Only commands that may create a store
    (a worker, ``db upgrade``) pass ``create``: any other, given a path with a typo, says
    so instead of leaving an empty database behind."""
    with _reported(2):
        return wayline.connect(url, upgrade=upgrade, create=create)


def _client(url: str, tenant: str) -> wayline.Wayline:
    """A client for an operator's command: its actions are audited as ``operator_name()``."""
    scope = SESSION["scope"]
    return wayline.Wayline(_open(url), tenant=tenant, scope=scope, operator=operator_name())  # type: ignore[arg-type]


def _run_id(store: wayline.Store, tenant: str, given: str) -> str:
    """The whole id of the run ``given`` names (itself, or a unique prefix); an unknown or
    ambiguous one ends the command as one red line (exit 1)."""
    from wayline.cli.run_ids import resolve_run_id

    with _reported():
        return resolve_run_id(store, tenant, given)
    raise AssertionError("unreachable")  # _reported exits


def _fail(message: str, code: int = 1) -> NoReturn:
    """Print an error in red and exit with ``code`` (1: refused or failed; 2: bad usage)."""
    console.print(f"[red]{escape(message)}[/]", highlight=False)
    raise typer.Exit(code)


@contextmanager
def _reported(code: int = 1) -> Iterator[None]:
    """A typed wayline error (or bad JSON from the command line) becomes one red line and
    exit ``code``, never a traceback."""
    import json

    try:
        yield
    except (WaylineError, json.JSONDecodeError) as exc:
        _fail(str(exc), code)


def _check_statuses(statuses: list[str]) -> None:
    unknown = [s for s in statuses if s not in RUN_STATUSES]
    if unknown or not statuses:
        _fail(f"unknown status {', '.join(unknown) or '(none)'}: use {', '.join(RUN_STATUSES)}", 2)


def _when(ts: float, *, seconds: bool = True) -> str:
    fmt = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime(fmt)


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


if __name__ == "__main__":
    main()
