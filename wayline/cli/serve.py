"""``wayline serve`` and ``wayline keys``: registered on the main command by ``register``."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from wayline.cli.actor import operator_name
from wayline.control.audit import audit_operator
from wayline.errors import WaylineError

if TYPE_CHECKING:
    from wayline.store.server_tables import ServerTables

__all__ = ["register"]

console = Console()
DbOption = Annotated[
    str, typer.Option("--db", envvar="WAYLINE_DB", help="Store URL, e.g. sqlite:///runs.db")
]
keys_app = typer.Typer(help="API keys for wayline serve.", no_args_is_help=True)


def _store(db: str):  # type: ignore[no-untyped-def]
    import wayline

    try:
        return wayline.connect(db)
    except WaylineError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def serve(
    graphs: Annotated[
        list[str] | None,
        typer.Argument(help="Assistants to serve, as NAME=module:attr (or NAME=file.py:attr)."),
    ] = None,
    db: DbOption = "sqlite:///wayline.db",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8123,
    workers: Annotated[
        int, typer.Option(help="Runs executed at once in this process (0: wayline worker does).")
    ] = 4,
    dev: Annotated[
        bool, typer.Option(help="Accept requests without a key (loopback only).")
    ] = False,
    demo: Annotated[
        bool, typer.Option(help="Serve the demo graphs and print a demo key (tenant default).")
    ] = False,
    config_file: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="An app's langgraph.json: serve the graphs it names (LangGraph's or "
            "wayline's), with its env and dependencies.",
        ),
    ] = None,
    max_body: Annotated[int, typer.Option(help="Largest request body, bytes.")] = 1 << 20,
    otel: Annotated[
        bool, typer.Option(help="OpenTelemetry spans and metrics (global providers).")
    ] = False,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="A browser origin allowed to call the API (repeat)."),
    ] = None,
    cpus: Annotated[
        str,
        typer.Option(
            help="CPUs the server runs on (Linux): 'auto': one CPU, the least busy, and "
            "another when other programs keep that one busy; 'all': wherever the OS "
            "schedules its threads; or a list such as 0, 0,2 or 0-3. Its threads hand the "
            "GIL to each other every step, which costs less on one core.",
        ),
    ] = "auto",
    webhook_secret: Annotated[
        str | None,
        typer.Option(
            envvar="WAYLINE_WEBHOOK_SECRET",
            help="HMAC key signing the POSTs to a run's webhook= (without it, webhook= is 422).",
        ),
    ] = None,
    verify_rate: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Finished runs the in-process workers verify a minute, in turn "
            "(reconstructed and compared with the digest each committed; a divergence is "
            "audited and on the dashboard), as wayline worker --verify-rate. 0: none.",
        ),
    ] = 0.0,
) -> None:
    """Serve the LangGraph Platform HTTP API, wayline's routes and the dashboard (/ui)."""
    from wayline.cli.loading import load_engine
    from wayline.cli.logs import log_to_stderr
    from wayline.server import ServerConfig
    from wayline.server.serve import serve as run_server
    from wayline.store.server_tables import server_tables

    specs = list(graphs or [])
    memory = None
    if config_file is not None:
        from wayline.cli.app_config import read_app_config

        try:
            app_config = read_app_config(config_file)
        except WaylineError as exc:
            console.print(f"[red]{exc}[/]")
            raise typer.Exit(2) from None
        app_config.apply()
        try:
            memory = app_config.memory()
        except WaylineError as exc:
            console.print(f"[red]{exc}[/]")
            raise typer.Exit(2) from None
        specs += [f"{name}={spec}" for name, spec in app_config.graphs.items()]
        for key, why in app_config.not_applied.items():
            console.print(f"{config_file}: {key!r} not applied: {why}")
    if demo:
        from wayline.demo.serve_demo import DEMO_GRAPHS

        specs += [f"{name}={spec}" for name, spec in DEMO_GRAPHS.items()]
    if verify_rate > 0 and workers == 0:
        console.print(
            "[red]--verify-rate needs in-process workers (--workers > 0): with --workers 0, "
            "give --verify-rate to wayline worker[/]"
        )
        raise typer.Exit(2)
    stopping = threading.Event()
    try:  # first: a bad --cpus changes nothing, and every thread started after is placed
        where = _place(cpus, stopping)
    except WaylineError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None
    try:  # before anything is opened or minted: a port in use changes nothing
        _check_port(host, port)
    except WaylineError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None
    store = _store(db)
    try:
        compiled: dict[str, Any] = {}
        for spec in specs:
            name, sep, target = spec.partition("=")
            if not sep or not name or not target:
                raise WaylineError(f"graph {spec!r} must look like NAME=module:attribute")
            compiled[name] = _served(load_engine(target, store), name, store, memory)
        if demo:
            key, revoked = _demo_key(server_tables(store))
            console.print("demo key (tenant default, actor demo, role finance):")
            console.print(key, soft_wrap=True)
            if revoked:
                ids = ", ".join(f"wl_{key_id}_..." for key_id in revoked)
                console.print(f"(the previous demo key no longer works: {ids})")
        config = ServerConfig(
            workers=workers,
            dev=dev,
            max_body_bytes=max_body,
            otel=otel,
            cors_origins=tuple(cors_origin or ()),
            webhook_secret=webhook_secret,
            verify_rate=verify_rate,
        )
        console.print(
            f"serving {', '.join(compiled)} on http://{host}:{port} (dashboard: /ui{where})"
        )
        log_to_stderr()
        try:
            run_server(store, compiled, host=host, port=port, config=config)
        finally:
            stopping.set()
    except WaylineError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None


DEMO_LABEL = "wayline serve --demo"


def _demo_key(tables: ServerTables) -> tuple[str, list[str]]:
    """A new demo key, and the ids of the earlier ones it revoked: a key is stored hashed,
    so one printed at an earlier start cannot be shown again; but only the last one
    printed works, instead of one more admin key at every start."""
    from wayline.control.keys import create_key

    earlier = [
        k.key_id
        for k in tables.list_keys("default")
        if k.label == DEMO_LABEL and k.revoked_at is None
    ]
    key, _ = create_key(
        tables,
        tenant="default",
        actor="demo",
        roles=("finance",),
        scopes=("admin",),
        label=DEMO_LABEL,
    )
    return key, [key_id for key_id in earlier if tables.revoke_key("default", key_id)]


def _check_port(host: str, port: int) -> None:
    """Refuse a port another program listens on before the store is opened (and a demo
    key minted); the server binds it for real a moment later."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise WaylineError(f"cannot listen on {host!r}: {exc}; check --host") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind(address)
        except OSError as exc:
            raise WaylineError(
                f"cannot listen on {host}:{port}: {exc.strerror}; another program (perhaps "
                "another wayline serve) has it: stop it or choose another --port"
            ) from None


def _served(engine: Any, name: str, store: Any, memory: Any = None) -> Any:
    """What the server serves of a loaded graph: a wayline graph itself; a LangGraph graph
    with what the server reads of its threads (``wayline.langgraph.served``), and the
    long-term store of the app's ``langgraph.json`` (``memory``) when it names one."""
    from wayline.worker.engine import WaylineEngine

    if isinstance(engine, WaylineEngine):
        return engine.graph
    from wayline.langgraph.served import served

    if memory is not None:
        engine.memory = memory
    return served(engine, store)


def _place(cpus: str, stopping: threading.Event) -> str:
    """Put this process where ``--cpus`` says, before it opens its store (whose pool may
    start threads) or loads a graph: threads started later inherit it. What the banner
    says of it."""
    from wayline.worker.affinity import parse_cpus, pin_this_thread
    from wayline.worker.placement import place_process

    if cpus == "all":
        return ""
    if cpus == "auto":
        placement = place_process(stopping)
        return "" if placement is None else f"; CPU {placement.cpu}, left when others keep it busy"
    chosen = parse_cpus(cpus)
    pin_this_thread(chosen)
    return f"; CPU {','.join(map(str, sorted(chosen)))}"


@keys_app.command("create")
def keys_create(
    db: DbOption = "sqlite:///wayline.db",
    tenant: Annotated[str, typer.Option(help="The tenant every request is scoped to.")] = "default",
    actor: Annotated[str, typer.Option(help="Who requests made with the key act as.")] = "",
    roles: Annotated[str, typer.Option(help="Roles, comma-separated (approvals).")] = "",
    scopes: Annotated[str, typer.Option(help="read, execute or admin (comma-separated).")] = (
        "execute"
    ),
    label: Annotated[str, typer.Option(help="A note to recognise the key by.")] = "",
) -> None:
    """Create a key; it is printed once, as the last line (only its hash is stored)."""
    from wayline.control.keys import create_key
    from wayline.store.server_tables import server_tables

    try:
        key, rec = create_key(
            server_tables(_store(db)),
            tenant=tenant,
            actor=actor,
            roles=_split(roles),
            scopes=_split(scopes),
            label=label,
        )
    except WaylineError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None
    audit_operator(
        _store(db),
        rec.tenant_id,
        operator_name(),
        "keys.create",
        "created",
        key_id=rec.key_id,
        key_actor=rec.actor,
        roles=list(rec.roles),
        scopes=list(rec.scopes),
    )
    console.print(
        f"key {rec.key_id}: tenant {rec.tenant_id}, actor {rec.actor}, roles "
        f"{list(rec.roles)}, scopes {list(rec.scopes)} (shown once; store it now)"
    )
    print(key)


@keys_app.command("list")
def keys_list(
    db: DbOption = "sqlite:///wayline.db",
    tenant: Annotated[str, typer.Option(help="Tenant whose keys to list.")] = "default",
) -> None:
    """The tenant's keys (ids, actors, roles, scopes; never the keys)."""
    from wayline.store.server_tables import server_tables

    table = Table()
    for col in ("key id", "actor", "roles", "scopes", "label", "revoked"):
        table.add_column(col)
    for k in server_tables(_store(db)).list_keys(tenant):
        table.add_row(
            k.key_id,
            k.actor,
            ",".join(k.roles),
            ",".join(k.scopes),
            k.label,
            "yes" if k.revoked_at is not None else "",
        )
    console.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: str,
    db: DbOption = "sqlite:///wayline.db",
    tenant: Annotated[str, typer.Option(help="The key's tenant.")] = "default",
) -> None:
    """Revoke a key by id: requests with it are refused (within the server's key cache)."""
    from wayline.store.server_tables import server_tables

    store = _store(db)
    if not server_tables(store).revoke_key(tenant, key_id):
        console.print(f"[red]no live key {key_id} for tenant {tenant}[/]")
        raise typer.Exit(1)
    audit_operator(store, tenant, operator_name(), "keys.revoke", "revoked", key_id=key_id)
    console.print(f"key {key_id} revoked")


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.add_typer(keys_app, name="keys")
