"""A local payments service that counts every charge: the other side of the crash test.

Standard library only. The ledger is a SQLite file committed (``synchronous=FULL``) before
any response is written, so what it says survives a restart of the service and a kill of
any client. Endpoints:

- ``POST /charges`` ``{"amount": int, "customer": str}``, optional ``Idempotency-Key``
  header: a key seen before returns the same charge (200, ``"deduplicated": true``) and
  charges nothing; the same key with a different amount or customer is refused (409);
  otherwise a new charge is committed and returned (201).
- ``GET /charges`` (``?idempotency_key=K`` to filter): the charges, oldest first.
- ``GET /stats``: ``{"charges": n, "requests": m, "deduplicated": d}``, read from the ledger.
- ``POST /control`` ``{"drop_response": bool, "kill_pid": int}``: for the next charge
  request only, after its commit, SIGKILL ``kill_pid`` (and wait until it is dead) and/or
  close the connection without a response. This is the deterministic "the provider
  committed, the response never reached the worker" point. ``{"clear": true}`` disarms.

Run it as ``python -m wayline.demo.payments --ledger ledger.db --port-file port``, or in
process: ``with PaymentsService(path) as svc: svc.url``. It binds 127.0.0.1 only, and it
kills only a process its own harness started: a descendant of the process that runs it in
a thread, or of the one that started it as a process (403 for any other pid).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import select
import signal
import sqlite3
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from wayline.cli.signals import stop_on_signals

__all__ = ["Ledger", "PaymentsService", "main"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS charges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    idempotency_key TEXT UNIQUE,
    amount INTEGER NOT NULL,
    customer TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT,
    charge_id TEXT,
    outcome TEXT NOT NULL,  -- created | deduplicated | conflict
    at REAL NOT NULL
);
"""
_CHARGE_FIELDS = ("id", "idempotency_key", "amount", "customer", "created_at")
_CHARGE_COLS = ", ".join(_CHARGE_FIELDS)


class Ledger:
    """The service's durable state. One connection, one lock: charges are serialized."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def charge(self, amount: int, customer: str, key: str | None) -> tuple[str, dict[str, Any]]:
        """Charge once per key; return (outcome, charge). Committed when this returns."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                seen = self._find(key) if key is not None else None
                if seen is None:
                    charge = {
                        "id": f"ch_{secrets.token_hex(8)}",
                        "idempotency_key": key,
                        "amount": amount,
                        "customer": customer,
                        "created_at": now,
                    }
                    self._db.execute(
                        f"INSERT INTO charges ({_CHARGE_COLS}) VALUES (?, ?, ?, ?, ?)",
                        tuple(charge.values()),
                    )
                    outcome = "created"
                else:
                    charge = seen
                    same = (seen["amount"], seen["customer"]) == (amount, customer)
                    outcome = "deduplicated" if same else "conflict"
                self._db.execute(
                    "INSERT INTO requests (idempotency_key, charge_id, outcome, at) "
                    "VALUES (?, ?, ?, ?)",
                    (key, charge["id"], outcome, now),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return outcome, charge

    def charges(self, key: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            if key is not None:
                found = self._find(key)
                return [found] if found else []
            rows = self._db.execute(f"SELECT {_CHARGE_COLS} FROM charges ORDER BY seq")
            return [_charge(r) for r in rows]

    def stats(self) -> dict[str, int]:
        with self._lock:
            (charges,) = self._db.execute("SELECT count(*) FROM charges").fetchone()
            requests, dedup = self._db.execute(
                "SELECT count(*), coalesce(sum(outcome = 'deduplicated'), 0) FROM requests"
            ).fetchone()
        return {"charges": charges, "requests": requests, "deduplicated": dedup}

    def _find(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute(
            f"SELECT {_CHARGE_COLS} FROM charges WHERE idempotency_key = ?", (key,)
        ).fetchone()
        return _charge(row) if row else None

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _charge(row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(_CHARGE_FIELDS, row, strict=True))


class PaymentsService:
    """The service on 127.0.0.1 in a background thread; ``port=0`` picks a free port."""

    def __init__(self, ledger: str | os.PathLike[str], *, port: int = 0) -> None:
        self.ledger = Ledger(ledger)
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._control_lock = threading.Lock()
        self._armed: dict[str, Any] = {"drop_response": False, "kill_pid": None}

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> PaymentsService:
        server = ThreadingHTTPServer(("127.0.0.1", self._port), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            args=(0.02,),  # how soon stop() returns: shutdown waits for the next poll
            name="payments-service",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.ledger.close()

    def __enter__(self) -> PaymentsService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the payments service is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- control ------------------------------------------------------------------------

    def arm(self, *, drop_response: bool = False, kill_pid: int | None = None) -> dict[str, Any]:
        """What ``POST /control`` does: act on the next charge request, after its commit."""
        with self._control_lock:
            self._armed = {"drop_response": bool(drop_response), "kill_pid": kill_pid}
            return dict(self._armed)

    def _take_armed(self) -> dict[str, Any]:
        with self._control_lock:
            armed = self._armed
            self._armed = {"drop_response": False, "kill_pid": None}
            return armed


def _handler_for(service: PaymentsService) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        svc = service

    return Handler


class _Handler(BaseHTTPRequestHandler):
    svc: PaymentsService
    server_version = "wayline-payments/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the ledger
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/charges":
            key = parse_qs(url.query).get("idempotency_key", [None])[0]
            self._reply(HTTPStatus.OK, {"charges": self.svc.ledger.charges(key)})
        elif url.path == "/stats":
            self._reply(HTTPStatus.OK, self.svc.ledger.stats())
        elif url.path == "/control":
            with self.svc._control_lock:
                self._reply(HTTPStatus.OK, dict(self.svc._armed))
        else:
            self._reply(HTTPStatus.NOT_FOUND, {"error": f"no route {url.path}"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        try:
            body = self._body()
        except ValueError as exc:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        if path == "/charges":
            self._post_charge(body)
        elif path == "/control":
            self._post_control(body)
        else:
            self._reply(HTTPStatus.NOT_FOUND, {"error": f"no route {path}"})

    def _post_charge(self, body: dict[str, Any]) -> None:
        amount, customer = body.get("amount"), body.get("customer")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "amount must be a positive integer"})
            return
        if not isinstance(customer, str) or not customer:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "customer must be a non-empty string"})
            return
        key = self.headers.get("Idempotency-Key") or None
        outcome, charge = self.svc.ledger.charge(amount, customer, key)
        armed = self.svc._take_armed()  # committed: now the next-charge faults apply
        if armed["kill_pid"] is not None:
            _sigkill_and_wait(int(armed["kill_pid"]))
        if armed["kill_pid"] is not None or armed["drop_response"]:
            self.close_connection = True
            return  # no status line, no body: the client sees the connection close
        if outcome == "conflict":
            self._reply(
                HTTPStatus.CONFLICT,
                {
                    "error": "idempotency key reused with a different amount or customer",
                    "charge": charge,
                },
            )
            return
        dedup = outcome == "deduplicated"
        status = HTTPStatus.OK if dedup else HTTPStatus.CREATED
        self._reply(status, {**charge, "deduplicated": dedup})

    def _post_control(self, body: dict[str, Any]) -> None:
        if body.get("clear"):
            self._reply(HTTPStatus.OK, self.svc.arm())
            return
        pid = body.get("kill_pid")
        if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1):
            self._reply(HTTPStatus.BAD_REQUEST, {"error": "kill_pid must be a pid (int > 1)"})
            return
        if pid is not None and not _started_by_harness(pid):
            self._reply(
                HTTPStatus.FORBIDDEN,
                {"error": f"pid {pid} was not started by this service's harness: not killed"},
            )
            return
        armed = self.svc.arm(drop_response=bool(body.get("drop_response")), kill_pid=pid)
        self._reply(HTTPStatus.OK, armed)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ValueError("body must be a JSON object")
        return body

    def _reply(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _sigkill_and_wait(pid: int, timeout: float = 10.0) -> None:
    """SIGKILL ``pid`` and return once it has died (exited or a zombie), so that no byte of
    the response, not even the connection closing, can reach it while it still runs."""
    fd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        fd = os.pidfd_open(pid)  # pins the pid: no reuse between here and the kill
    try:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        if fd is not None:
            select.select([fd], [], [], timeout)  # readable once the process has died
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.001)
    finally:
        if fd is not None:
            os.close(fd)


def _started_by_harness(pid: int) -> bool:
    """Whether ``pid`` descends from this process (the service runs in the harness) or from
    its parent (the harness started the service as a process of its own)."""
    harness = {os.getpid()} | ({os.getppid()} if os.getppid() > 1 else set())
    seen = 0
    while pid > 1 and seen < 64:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid in harness:
            return True
        seen += 1
    return False


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wayline.demo.payments", description=__doc__)
    p.add_argument("--ledger", required=True, help="SQLite file of the charges")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (the default)")
    p.add_argument("--port-file", help="write the chosen port here (atomically)")
    args = p.parse_args(argv)

    stop = threading.Event()
    stop_on_signals(stop.set)
    svc = PaymentsService(args.ledger, port=args.port).start()
    try:
        if args.port_file:
            tmp = f"{args.port_file}.tmp"
            Path(tmp).write_text(str(svc.port))
            os.replace(tmp, args.port_file)
        print(f"payments service on {svc.url} (ledger {args.ledger})", flush=True)
        stop.wait()
    finally:
        svc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
