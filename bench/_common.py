"""Shared pieces of the benchmark scripts: the workload, graph builders for wayline and
LangGraph, a byte-counting LangGraph saver, a fresh-process probe, timing and output.

Not a test module. Run a script, e.g. ``python bench/checkpoint_bytes.py --quick``.

The workload (the same for both frameworks): one run, one trivial node looping on itself
through a conditional edge, n node steps. Variants:

- ``accumulate``: ``log: Annotated[list, operator.add]`` gains one ~500-byte item per step
  (plus an ``n: int`` counter). LangGraph runs it as plain ``operator.add`` ("plain") or
  through ``DeltaChannel(batch_add, snapshot_frequency=100)`` ("delta").
- ``replace``: the control arm; ``last: str`` (a LastValue key) is replaced by a ~500-byte
  value each step (plus the counter).

Items are base64 of a SHA-256 chain seeded by the step: no repetition inside an item or
across items, so neither msgpack nor SQLite pages get them cheaper than ~500 bytes.

This file doubles as the fresh-process probe: ``python bench/_common.py probe '<json>'``
opens a store, compiles the graph, times ``get_state`` and prints one JSON line.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import operator
import os
import platform
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
ITEM_CHARS = 500
RUN_ID = "r"
TENANT = "default"
RECURSION_LIMIT = 1_000_000


# -- the workload -----------------------------------------------------------------------


def make_item(step: int) -> str:
    """A ~500-byte, not trivially compressible string derived from the step number."""
    raw = b"".join(hashlib.sha256(f"{step}:{k}".encode()).digest() for k in range(12))
    return base64.b64encode(raw)[:ITEM_CHARS].decode()


_ITEMS: list[str] = []


def prepare_items(n: int) -> None:
    """Make items 0..n-1 ahead of a timed run, so a node's cost is a list lookup (trivial
    nodes) rather than 12 SHA-256 calls."""
    _ITEMS.extend(make_item(i) for i in range(len(_ITEMS), n))


def item(step: int) -> str:
    return _ITEMS[step] if step < len(_ITEMS) else make_item(step)


class AccState(TypedDict):
    log: Annotated[list[Any], operator.add]
    n: int


class ReplState(TypedDict):
    last: str
    n: int


def batch_add(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """DeltaChannel's batch reducer for the same append: reducer(state, [w1, w2, ...])."""
    out = list(state)
    for w in writes:
        out.extend(w)
    return out


def _acc_node(s: dict[str, Any]) -> dict[str, Any]:
    return {"log": [item(s["n"])], "n": s["n"] + 1}


def _repl_node(s: dict[str, Any]) -> dict[str, Any]:
    return {"last": item(s["n"]), "n": s["n"] + 1}


def _router(n: int, end: Any) -> Callable[[dict[str, Any]], Any]:
    def route(s: dict[str, Any]) -> Any:
        return "step" if s["n"] < n else end

    return route


def initial(workload: str) -> dict[str, Any]:
    return {"log": [], "n": 0} if workload == "accumulate" else {"last": "", "n": 0}


def config(thread: str = RUN_ID) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": RECURSION_LIMIT}


def wayline_graph(workload: str, n: int) -> Any:
    """An uncompiled wayline StateGraph running ``n`` node steps (run.step ends at n)."""
    from wayline import END, START, StateGraph

    g = StateGraph(AccState if workload == "accumulate" else ReplState)
    g.add_node("step", _acc_node if workload == "accumulate" else _repl_node)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", _router(n, END))
    return g


_LG_SCHEMAS: dict[str, Any] = {}


def _lg_schema(variant: str, snapshot_frequency: int = 100) -> Any:
    key = f"{variant}:{snapshot_frequency}"
    if key not in _LG_SCHEMAS:
        if variant == "plain":
            _LG_SCHEMAS[key] = AccState
        elif variant == "replace":
            _LG_SCHEMAS[key] = ReplState
        elif variant == "delta":
            from langgraph.channels import DeltaChannel

            # built at run time: the channel's snapshot frequency is a parameter
            _LG_SCHEMAS[key] = TypedDict(  # type: ignore[operator]
                "DeltaState",
                {
                    "log": Annotated[
                        list, DeltaChannel(batch_add, snapshot_frequency=snapshot_frequency)
                    ],
                    "n": int,
                },
            )
        else:
            raise ValueError(variant)
    return _LG_SCHEMAS[key]


def langgraph_graph(variant: str, n: int) -> Any:
    """An uncompiled LangGraph StateGraph: variant plain | delta | replace."""
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_lg_schema(variant))
    # LangGraph types a node's input as its state class; these plain-dict nodes serve all
    # three schemas (annotating them would make LangGraph read them as input schemas).
    g.add_node("step", _repl_node if variant == "replace" else _acc_node)  # type: ignore[call-overload, arg-type, unused-ignore]
    g.add_edge(START, "step")
    g.add_conditional_edges("step", _router(n, END))
    return g


def lg_workload(variant: str) -> str:
    return "replace" if variant == "replace" else "accumulate"


def has_delta_channel() -> bool:
    try:
        from langgraph.channels import DeltaChannel  # noqa: F401
    except ImportError:
        return False
    return True


# -- stores -----------------------------------------------------------------------------


def wayline_url(path: Path | str, synchronous: str = "FULL") -> str:
    if str(path) == ":memory:":
        return "sqlite:///:memory:"
    url = f"sqlite:///{Path(path).resolve()}"  # absolute path: sqlite:////abs/path.db
    return url if synchronous.upper() == "FULL" else f"{url}?synchronous={synchronous.upper()}"


def lg_connect(path: Path | str, synchronous: str | None = None) -> sqlite3.Connection:
    """The connection SqliteSaver.from_conn_string would make (check_same_thread=False);
    ``synchronous`` is left at SQLite's default (FULL) unless given."""
    conn = sqlite3.connect(str(path), check_same_thread=False)
    if synchronous:
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    return conn


def lg_synchronous(conn: sqlite3.Connection) -> str:
    (level,) = conn.execute("PRAGMA synchronous").fetchone()
    return {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(level, str(level))


class ByteCounter:
    """Bytes a LangGraph saver serialized, by where they went."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.local = threading.local()
        self.lock = threading.Lock()

    def add(self, where: str, n: int) -> None:
        with self.lock:
            self.counts[where] += n

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def counting_saver(conn: sqlite3.Connection, counter: ByteCounter) -> Any:
    """A SqliteSaver that counts the bytes it serializes.

    How: its serde is a JsonPlusSerializer subclass whose ``dumps_typed`` adds the length of
    every serialized value to the counter, attributed to ``checkpoints`` while ``put`` runs
    and to ``writes`` while ``put_writes`` runs; ``put`` also adds the length of the metadata
    JSON it stores (recomputed the way the saver computes it). A subclass rather than a
    wrapper, so LangGraph's ``with_allowlist`` clone (``copy.copy``) keeps counting into the
    same counter. Nothing about what is written changes.
    """
    from langgraph.checkpoint.base import get_checkpoint_metadata
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite import SqliteSaver

    class CountingSerde(JsonPlusSerializer):
        def __init__(self, counter: ByteCounter) -> None:
            super().__init__()
            self.counter = counter

        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            type_, data = super().dumps_typed(obj)
            self.counter.add(getattr(self.counter.local, "where", None) or "other", len(data))
            return type_, data

    class CountingSqliteSaver(SqliteSaver):
        def __init__(self, conn: sqlite3.Connection, counter: ByteCounter) -> None:
            super().__init__(conn, serde=CountingSerde(counter))
            self.counter = counter

        def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
            self.counter.local.where = "checkpoints"
            try:
                out = super().put(config, checkpoint, metadata, new_versions)
            finally:
                self.counter.local.where = None
            meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
            self.counter.add("metadata", len(meta.encode("utf-8", "ignore")))
            self.counter.calls["put"] += 1
            return out

        def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[no-untyped-def]
            self.counter.local.where = "writes"
            try:
                super().put_writes(config, writes, task_id, task_path)
            finally:
                self.counter.local.where = None
            self.counter.calls["put_writes"] += 1

    return CountingSqliteSaver(conn, counter)


def sqlite_file_size(path: Path | str) -> int:
    """Size of a SQLite database after folding its WAL into the main file (all writers
    closed): what the run left on disk."""
    path = Path(path)
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(str(path))) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = Path(f"{path}-wal")  # empty after TRUNCATE unless a reader still held it
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


@contextlib.contextmanager
def temp_dir(name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"wayline-bench-{name}-") as d:
        yield Path(d)


def free_port() -> int:
    """A loopback port free now, for a server subprocess to listen on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- raw commits ------------------------------------------------------------------------


def raw_commit_rate(path: Path, commits: int, synchronous: str = "FULL") -> float:
    """One-row commits per second in WAL mode at the given synchronous level: the physical
    limit of a store that makes each step durable before the next."""
    with contextlib.closing(sqlite3.connect(str(path), isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {synchronous}")
        db.execute("CREATE TABLE IF NOT EXISTS t (i INTEGER PRIMARY KEY, v BLOB)")
        payload = item(0).encode()
        start = time.perf_counter()
        for _ in range(commits):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (v) VALUES (?)", (payload,))
            db.execute("COMMIT")
        return commits / (time.perf_counter() - start)


# -- the fresh-process probe ------------------------------------------------------------


def probe(spec: dict[str, Any], timeout: float = 300.0) -> dict[str, Any]:
    """Run ``_probe_main(spec)`` in a fresh Python process and return its JSON result."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "probe", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(BENCH_DIR.parent),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"probe {spec} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def _probe_main(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: open the store, compile the graph (timed apart), then time the
    first ``get_state`` (cold: first call in this process) and a second one (warm) at each
    of ``spec["points"]`` (wayline; LangGraph: its latest checkpoint). Also callable in
    process, for a fresh connection and freshly compiled graph without a fresh process."""
    out: dict[str, Any] = {"pid": os.getpid()}
    t0 = time.perf_counter()
    if spec["fw"] == "wayline":
        import wayline

        store = wayline.connect(spec["url"])
        app = wayline_graph(spec["workload"], 0).compile(
            store, snapshot_every=spec["snapshot_every"]
        )
        out["open_ms"] = (time.perf_counter() - t0) * 1000
        cfg = config()
        # [label, step or None (the last committed step)]; the first point is the cold call
        for label, step in spec.get("points", [["end", None]]):
            c = cfg if step is None else {"configurable": {"thread_id": RUN_ID, "step": step}}
            t = time.perf_counter()
            st = app.get_state(c)
            ms = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            st2 = app.get_state(c)
            warm = (time.perf_counter() - t) * 1000
            assert st2.values == st.values
            info = st.read_info  # wayline's figures of the read
            assert info is not None
            out[label] = {
                "cold_ms": ms,
                "warm_ms": warm,
                "step": st.metadata["step"],
                "snapshot_step": info.snapshot_step,
                "folds": info.replayed_steps,
                "rows_read": info.rows_read,
                "items": len(st.values.get("log", [])),
                "n": st.values.get("n"),
            }
        if spec.get("verify"):
            t = time.perf_counter()
            v = app.verify(cfg)
            out["verify"] = {"ok": v.ok, "ms": (time.perf_counter() - t) * 1000}
        store.close()
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = lg_connect(spec["path"])
        saver = SqliteSaver(conn)
        saver.setup()  # part of opening the store, as wayline.connect creates its schema
        app = langgraph_graph(spec["variant"], 0).compile(checkpointer=saver)
        out["open_ms"] = (time.perf_counter() - t0) * 1000
        cfg = config()
        t = time.perf_counter()
        st = app.get_state(cfg)
        ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        st2 = app.get_state(cfg)
        warm = (time.perf_counter() - t) * 1000
        assert len(st2.values.get("log", [])) == len(st.values.get("log", []))
        out["end"] = {
            "cold_ms": ms,
            "warm_ms": warm,
            "step": st.metadata.get("step"),
            "items": len(st.values.get("log", [])),
            "n": st.values.get("n"),
        }
        conn.close()
    return out


# -- numbers and output -----------------------------------------------------------------


def cpu_seconds(procs: list[Any]) -> dict[int, float]:
    """user + system CPU seconds per pid (psutil processes); gone processes are skipped."""
    out = {}
    for p in procs:
        with contextlib.suppress(Exception):
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
    return out


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(after[pid] - before.get(pid, 0.0) for pid in after)


def process_tree(pid: int) -> list[Any]:
    """A process and all its descendants (psutil), for ``cpu_seconds``; none if it is gone."""
    import psutil  # type: ignore[import-untyped]

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def fmt_bytes(n: float | None) -> str:
    if n is None or n != n:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def fmt_num(x: float | None, digits: int = 0) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:,.{digits}f}"


def fmt_ratio(x: float | None) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:.1f}x" if x < 100 else f"{x:,.0f}x"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table with rich when it is installed, plain text otherwise."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [
            max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(str(c))
            for i, c in enumerate(columns)
        ]
        print(f"\n{title}")
        print("  ".join(str(c).rjust(w) for c, w in zip(columns, widths, strict=True)))
        for r in rows:
            print("  ".join(str(v).rjust(w) for v, w in zip(r, widths, strict=True)))
        return
    table = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        table.add_column(str(c), justify="left" if i == 0 else "right")
    for r in rows:
        styled = []
        for v in r:
            s = str(v)
            if s == "PASS":
                s = "[bold green]PASS[/]"
            elif s == "FAIL":
                s = "[bold red]FAIL[/]"
            styled.append(s)
        table.add_row(*styled)
    Console(width=max(100, min(220, _terminal_width()))).print(table)


def _terminal_width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 200


def environment() -> dict[str, Any]:
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for pkg in ("wayline", "langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": versions,
        "argv": sys.argv,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_json(name: str, data: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=_json_default) + "\n")
    return path


def _json_default(o: Any) -> Any:
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple):
        return list(o)
    return repr(o)


def quick_flag(argv: Sequence[str] | None = None, description: str = "") -> Any:
    import argparse

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="a ~30 s run with fewer points")
    return p.parse_args(argv)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "probe":
        print(json.dumps(_probe_main(json.loads(sys.argv[2]))))
    else:
        sys.exit("usage: python bench/_common.py probe '<json spec>' (used by the benchmarks)")


Arm = Callable[..., dict[str, Any]]


def run_workload(
    name: str,
    tmp: Any,
    wl_ns: list[int],
    lg_ns: list[int],
    durability: str,
    wayline_arm: Arm,
    langgraph_arm: Arm,
) -> list[dict[str, Any]]:
    """Both frameworks on one workload (checkpoint_bytes' subgraph and chat arms), SQLite
    synchronous=NORMAL: bytes, not fsyncs, are what these arms measure."""
    out = []
    for n in wl_ns:
        print(f"wayline {name} n={n} ...", flush=True)
        out.append(wayline_arm(tmp, n, durability, "NORMAL"))
    for n in lg_ns:
        print(f"langgraph {name} n={n} ...", flush=True)
        out.append(langgraph_arm(tmp, n, "NORMAL"))
    return out


def report_workload(title: str, decile: str, rows: list[dict[str, Any]]) -> None:
    print_table(
        title,
        ["framework", "n", "total", "B/step", decile, "SQLite file"],
        [
            [
                r["framework"],
                fmt_num(r["n"]),
                fmt_bytes(r["total"]),
                fmt_num(r["bytes_per_step"]),
                f"{r['first_to_last']:.2f}" if "first_to_last" in r else "-",
                fmt_bytes(r["file_size"]),
            ]
            for r in rows
        ],
    )
