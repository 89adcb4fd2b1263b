"""``wayline killtest``: a kill test for the user's own graph on the user's own store.

Each trial runs the graph in a child process (``wayline.cli.killtest_child``), SIGKILLs
it at a node start or finish boundary (the child stops itself exactly there) or at a random
moment, then resumes the run in a fresh process and compares three things with what the
committed history says:

- node executions the killed process performed that the committed history does not know
  (wayline counts task starts itself, through ``wayline.graph.probe``): under ``sync`` at
  most the step in flight, under ``async`` at most the writer's lag bound more; more means
  the store acknowledged commits it had not made durable;
- effects performed more than once under one key (a resend of an ``idempotent=True``
  effect is counted apart: its provider deduplicates);
- whether the final state equals an uninterrupted run's (by state digest).

The graph may be a LangGraph one (a ``CompiledStateGraph``, an ``@entrypoint``): it runs on
LangGraph's own engine the way a worker runs it (claimed, every write fenced:
``wayline.langgraph.probed``), its task starts and finishes reported from LangChain's
callbacks, its committed history its newest checkpoint and that checkpoint's writes.

``--kill-db`` kills the database server too (a PostgreSQL the test starts itself,
``--db embedded-postgres[?synchronous_commit=off]``). ``--runs R --concurrency C`` is
the fleet version: one worker holding R runs is killed, a fresh one takes them over, and
each run's replayed steps are counted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

import wayline
from wayline.cli.killtest_child import Target, load_target, parse_event
from wayline.cli.killtest_pg import LocalPostgres, is_embedded
from wayline.cli.killtest_report import detail_lines, drift_lines, render, summary
from wayline.client import Wayline
from wayline.errors import WaylineError
from wayline.store.records import RunRecord

__all__ = ["KillPlan", "Setup", "TrialResult", "analyse", "first_difference", "run_killtest"]

MODES = ("sync", "async", "exit")
CHILD_TIMEOUT_S = 120.0
POLL_S = 0.002


@dataclasses.dataclass(frozen=True, slots=True)
class KillPlan:
    """Where a trial kills: the Nth task start or finish, or a random moment (seconds
    after the child's first event)."""

    kind: str
    """``task_start``, ``task_finish`` or ``random``."""
    at: int = 0
    delay: float = 0.0

    def label(self) -> str:
        if self.kind == "random":
            return f"random {self.delay * 1000:.0f} ms"
        return f"{self.kind.removeprefix('task_')} #{self.at}"


@dataclasses.dataclass(frozen=True, slots=True)
class Setup:
    """What every trial of one invocation shares."""

    graph: str
    db: str
    """The store URL the children use (for ``--kill-db``: the private server's)."""
    input: str
    tenant: str
    workdir: Path
    seed: int
    kill_db: bool = False
    concurrency: int = 1
    created: list[str] = dataclasses.field(default_factory=list)
    """Every run the test made in the store (purged at the end unless ``--keep``)."""
    reference: wayline.Store | None = None
    """The scratch store of the reference runs (a SQLite file in ``workdir``)."""


@dataclasses.dataclass
class TrialResult:
    mode: str
    trial: int
    kill: str
    run_id: str
    runs: int = 1
    committed_step: int | None = None
    executions: int = 0
    """Task starts by the killed process."""
    unknown: int = 0
    """...that the committed history does not know (steps after it, unsaved peers)."""
    beyond: int = 0
    """...of which beyond the mode's bound (the step in flight, plus the async lag)."""
    bound: str = ""
    replayed: int = 0
    """Task starts of the resuming process that repeat one of the killed process's."""
    replayed_steps: list[int] = dataclasses.field(default_factory=list)
    """Per run (fleet): distinct steps the resuming worker executed again."""
    duplicate_effects: int = 0
    """Keys a non-idempotent effect was performed under more than once."""
    resent: int = 0
    """Keys an ``idempotent=True`` effect was dispatched under more than once (allowed)."""
    status: str = ""
    state_equal: bool | None = None
    states_equal: int = 0
    note: str = ""
    error: str | None = None
    db_killed: bool = False
    drift: dict[str, Any] | None = None
    """When the state differs from the reference run's: the first channel that differs
    (``channel``) and its value in this run (``run``) and in the reference (``reference``)."""

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and self.beyond == 0
            and self.duplicate_effects == 0
            and self.state_equal is not False
        )


# -- the baseline ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Baseline:
    digest: str
    status: str
    starts: int
    finishes: int
    seconds: float


def _baseline(setup: Setup, app: Target, mode: str) -> Baseline:
    run_id = f"kt-base-{mode}-{setup.seed}-{os.getpid()}"
    setup.created.append(run_id)
    events = setup.workdir / f"{run_id}.events"
    child = _spawn(setup, events, run_id=run_id, mode=mode, resume=False)
    _wait(child, events)
    if child.returncode != 0:
        raise WaylineError(
            f"the uninterrupted run of {setup.graph} failed (exit {child.returncode}): "
            f"{_child_error(setup, run_id)}; fix the graph or its --input first"
        )
    evs = _events(events)
    # the run itself, first task start to last finish: no interpreter start-up or exit
    seconds = evs[-1]["t"] - evs[0]["t"] if evs else 0.0
    with _store(setup) as store:
        run = store.get_run(setup.tenant, run_id)
        digest = app.with_store(store).state_digest(_cfg(setup, run_id))
    return Baseline(
        digest,
        run.status if run else "?",
        sum(e["kind"] == "task_start" for e in evs),
        sum(e["kind"] == "task_finish" for e in evs),
        seconds,
    )


def _plans(base: Baseline, trials: int, rng: random.Random) -> list[KillPlan]:
    """Half the trials at node boundaries (each boundary once before any repeats, in a
    seeded order), half at random moments within an uninterrupted run's duration."""
    bounds = [KillPlan("task_start", k) for k in range(1, base.starts + 1)]
    bounds += [KillPlan("task_finish", k) for k in range(1, base.finishes + 1)]
    rng.shuffle(bounds)
    plans = []
    for i in range(trials):
        if i % 2 == 0 and bounds:
            plans.append(bounds[(i // 2) % len(bounds)])
        else:
            plans.append(KillPlan("random", delay=rng.uniform(0, base.seconds)))
    return plans


# -- one trial --------------------------------------------------------------------------


def run_trial(
    setup: Setup,
    app: Target,
    base: Baseline,
    mode: str,
    index: int,
    plan: KillPlan,
    pg: LocalPostgres | None,
) -> TrialResult:
    run_id = f"kt-{mode}-{setup.seed}-{index}-{os.getpid()}"
    setup.created.append(run_id)
    result = TrialResult(mode, index, plan.label() + (" +db" if setup.kill_db else ""), run_id)
    ev1, ev2 = setup.workdir / f"{run_id}.1.events", setup.workdir / f"{run_id}.2.events"
    child = _spawn(setup, ev1, run_id=run_id, mode=mode, resume=False, plan=plan)
    finished = _kill(setup, child, ev1, plan, pg, result)
    with _store(setup) as store:
        run = store.get_run(setup.tenant, run_id)
        result.committed_step = run.step if run else None
        committed = _committed(store, setup.tenant, [run_id], app.with_store(store))
    if finished or (run is not None and run.status == base.status and run.inbox is None):
        result.note = "ended first"  # the kill came after the run had finished
    if result.committed_step is not None or not finished:
        resumer = _spawn(setup, ev2, run_id=run_id, mode=mode, resume=True)
        _wait(resumer, ev2)
    with _store(setup) as store:
        run = store.get_run(setup.tenant, run_id)
        result.status = run.status if run else "absent"
        if run is None:
            result.state_equal = False  # the run is gone: nothing equals what should be there
        elif run.status != "parked":
            same, result.drift = _compare(setup, app, store, run, mode)
            result.state_equal = same and run.status == base.status
    result.states_equal = int(bool(result.state_equal))
    analyse(result, app, _events(ev1), _events(ev2), committed)
    return result


def _compare(
    setup: Setup, app: Target, store: wayline.Store, run: RunRecord, mode: str
) -> tuple[bool, dict[str, Any] | None]:
    """Whether the killed and resumed run ended in the state of an unkilled reference run
    of the same identity (tenant, run id, incarnation: so the same task ids and effect
    keys), run to its end in this process on a scratch store; and if not, the first
    channel that differs. A value derived from the run id or an effect key is the same in
    both, so it is not drift."""
    cfg = _cfg(setup, run.run_id)
    mine = app.with_store(store)
    reference = _reference(setup, app, run, mode)
    if mine.state_digest(cfg) == reference.state_digest(cfg):
        return True, None
    return False, first_difference(mine.get_state(cfg).values, reference.get_state(cfg).values)


def _reference(setup: Setup, app: Target, run: RunRecord, mode: str) -> Target:
    """The reference run of ``run``'s identity, on the scratch store, run to its end."""
    ref = setup.reference
    assert ref is not None, "run_killtest opens the reference store"
    ref.create_run(
        run.tenant_id,
        run.run_id,
        graph_name=run.graph_name,
        graph_version=run.graph_version,
        durability=mode,
        schema_version=run.schema_version,
        subject=run.subject,
        classes=run.classes,
        incarnation=run.incarnation,
    )
    graph = app.with_store(ref)
    try:
        graph.invoke(json.loads(setup.input), _cfg(setup, run.run_id), durability=mode)
    except Exception as exc:
        raise WaylineError(
            f"the unkilled reference run of {run.run_id} failed ({type(exc).__name__}: "
            f"{exc}), though the test's uninterrupted run had not: does the graph depend "
            "on something outside its state, such as a file or a counter?"
        ) from exc
    return graph


def first_difference(run: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any] | None:
    """The first channel (in the reference's order, then the run's own) whose values
    differ, with both values as JSON-safe data; None when the values are equal (the runs
    differ in something else, such as their status)."""
    for channel in [*reference, *(k for k in run if k not in reference)]:
        missing = object()
        a, b = run.get(channel, missing), reference.get(channel, missing)
        if a != b:
            return {
                "channel": channel,
                "run": _plain(a, missing),
                "reference": _plain(b, missing),
            }
    return None


def _plain(value: Any, missing: object) -> Any:
    """``value`` as JSON-safe data (what ``--json`` can hold); ``"(absent)"`` when unset."""
    if value is missing:
        return "(absent)"
    return json.loads(json.dumps(value, default=repr))


def _committed(
    store: wayline.Store, tenant: str, run_ids: Sequence[str], app: Target = None
) -> dict[str, Any]:
    """Per run: (committed step, ids of the next step's saved peers)."""
    out: dict[str, Any] = {}
    own = getattr(app, "committed", None)
    for run_id in run_ids:
        if own is not None:  # a LangGraph thread: its newest checkpoint and its writes
            out[run_id] = own(tenant, run_id)
            continue
        run = store.get_run(tenant, run_id)
        step = run.step if run is not None else -1
        saved = {p.task_id for p in store.load_pending(tenant, run_id, step + 1)}
        out[run_id] = (step, saved)
    return out


def analyse(
    result: TrialResult,
    app: Target,
    killed: list[dict[str, Any]],
    resumed: list[dict[str, Any]],
    committed: dict[str, tuple[int, set[str]]],
) -> None:
    """Fill in the counts of ``result`` from both processes' events and the history
    committed when the first process died."""
    lag = {"sync": 0, "async": app.max_lag_steps, "exit": None}[result.mode]
    result.bound = "1 step" if lag == 0 else "any" if lag is None else f"1+{lag} steps"
    for run_id, (step, saved) in committed.items():
        starts1 = [e for e in killed if e["run"] == run_id and e["kind"] == "task_start"]
        starts2 = [e for e in resumed if e["run"] == run_id and e["kind"] == "task_start"]
        unknown = [
            e
            for e in starts1
            if e["step"] > step and not (e["step"] == step + 1 and e["task"] in saved)
        ]
        result.executions += len(starts1)
        result.unknown += len(unknown)
        if lag is not None:
            result.beyond += sum(e["step"] > step + 1 + lag for e in unknown)
        first = {(e["step"], e["task"]) for e in starts1}
        again = [e for e in starts2 if (e["step"], e["task"]) in first]
        result.replayed += len(again)
        result.replayed_steps.append(len({e["step"] for e in again}))
    done = Counter(
        (e["key"], e["idempotent"]) for e in killed + resumed if e["kind"] == "effect_done"
    )
    for (_, idempotent), n in done.items():
        if n > 1 and idempotent:
            result.resent += 1
        elif n > 1:
            result.duplicate_effects += 1


# -- the fleet ----------------------------------------------------------------------------


def run_fleet(
    setup: Setup,
    app: Target,
    base: Baseline,
    mode: str,
    index: int,
    runs: int,
    rng: random.Random,
    pg: LocalPostgres | None,
) -> TrialResult:
    """One worker holding ``runs`` runs is killed at a random task start; a fresh worker
    takes them over once their leases lapse."""
    prefix = f"kt-fleet-{mode}-{setup.seed}-{index}-{os.getpid()}"
    ids = [f"{prefix}-{i}" for i in range(runs)]
    setup.created.extend(ids)
    plan = KillPlan("task_start", rng.randint(runs, max(runs, runs * base.starts * 3 // 4)))
    result = TrialResult(mode, index, plan.label() + (" +db" if setup.kill_db else ""), prefix)
    result.runs = runs
    with _store(setup) as store:
        client = Wayline(store, tenant=setup.tenant)
        for run_id in ids:
            client.start(app, json.loads(setup.input), run_id=run_id, durability=mode)
    ev1, ev2 = setup.workdir / f"{prefix}.1.events", setup.workdir / f"{prefix}.2.events"
    child = _spawn(setup, ev1, worker=True, plan=plan)
    if _kill(setup, child, ev1, plan, pg, result):
        result.note = "ended first"
    with _store(setup) as store:
        committed = _committed(store, setup.tenant, ids, app.with_store(store))
    resumer = _spawn(setup, ev2, worker=True, until=ids)
    _wait(resumer, ev2)
    statuses: Counter[str] = Counter()
    with _store(setup) as store:
        for run_id in ids:
            run = store.get_run(setup.tenant, run_id)
            status = run.status if run else "absent"
            statuses[status] += 1
            if run is not None and status != "parked":
                same, drift = _compare(setup, app, store, run, mode)
                result.drift = result.drift or drift
                result.states_equal += int(same and status == base.status)
    result.status = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    result.state_equal = result.states_equal + statuses["parked"] == runs
    analyse(result, app, _events(ev1), _events(ev2), committed)
    return result


# -- processes ----------------------------------------------------------------------------


def _spawn(
    setup: Setup,
    events: Path,
    *,
    run_id: str | None = None,
    mode: str = "sync",
    resume: bool = False,
    plan: KillPlan | None = None,
    worker: bool = False,
    until: Sequence[str] | None = None,
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "wayline.cli.killtest_child", "--graph", setup.graph]
    cmd += ["--db", setup.db, "--tenant", setup.tenant, "--events", str(events)]
    tag = run_id or events.stem
    cmd += ["--out", str(setup.workdir / f"{tag}.report.json")]
    if worker:
        cmd += ["--worker", "--concurrency", str(setup.concurrency), "--lease", "1.0"]
        if until is not None:
            cmd += ["--until-settled", json.dumps(list(until))]
    else:
        cmd += ["--run-id", str(run_id), "--mode", mode]
        if not resume:
            cmd += ["--input", setup.input]
    if plan is not None and plan.kind != "random":
        cmd += ["--stop-kind", plan.kind, "--stop-at", str(plan.at)]
        if setup.kill_db:
            cmd += ["--hold", str(events) + ".hold"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill(
    setup: Setup,
    child: subprocess.Popen[bytes],
    events: Path,
    plan: KillPlan,
    pg: LocalPostgres | None,
    result: TrialResult,
) -> bool:
    """Kill the child (and the database) as planned; True if it finished first."""
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    hold = Path(str(events) + ".hold")
    if plan.kind == "random":
        while child.poll() is None and not _has_events(events):
            _tick(deadline, "the child's first event")
        time.sleep(plan.delay)  # the random moment itself, not a synchronisation
    elif setup.kill_db:
        while child.poll() is None and not hold.exists():
            _tick(deadline, "the child to reach its kill point")
    else:  # the child SIGKILLs itself at the boundary
        return _reap(child) != -signal.SIGKILL
    if child.poll() is not None:
        _reap(child)
        return True
    child.send_signal(signal.SIGKILL)
    if setup.kill_db and pg is not None:
        pg.kill_immediate()
        result.db_killed = True
        pg.restart()
    _reap(child)
    return False


def _wait(child: subprocess.Popen[bytes], events: Path) -> float:
    try:
        child.wait(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise WaylineError(
            f"a kill-test child ran longer than {CHILD_TIMEOUT_S:.0f}s; events in {events}"
        ) from None
    if child.stderr is not None:
        child.stderr.close()
    return time.monotonic()


def _reap(child: subprocess.Popen[bytes]) -> int:
    code = child.wait(timeout=CHILD_TIMEOUT_S)
    if child.stderr is not None:
        child.stderr.close()
    return code


def _tick(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise WaylineError(f"timed out waiting for {what}")
    time.sleep(POLL_S)


def _has_events(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


def _events(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    return [e for e in map(parse_event, lines) if e is not None]


def _child_error(setup: Setup, run_id: str) -> str:
    try:
        report = json.loads((setup.workdir / f"{run_id}.report.json").read_text())
    except (OSError, ValueError):
        return "no report"
    return str(report.get("error"))


@contextlib.contextmanager
def _store(setup: Setup) -> Iterator[wayline.Store]:
    store = wayline.connect(setup.db)
    try:
        yield store
    finally:
        store.close()


def _purge(setup: Setup) -> None:
    """Leave the user's store as it was: erase every run the test made."""
    with _store(setup) as store:
        client = Wayline(store, tenant=setup.tenant)
        for run_id in setup.created:
            client.purge(run_id)


def _cfg(setup: Setup, run_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": run_id, "tenant": setup.tenant}}


# -- the command --------------------------------------------------------------------------


def run_killtest(
    console: Console,
    *,
    graph: str,
    db: str,
    input: str,
    trials: int,
    modes: Sequence[str],
    seed: int,
    json_path: Path | None = None,
    kill_db: bool = False,
    runs: int = 1,
    concurrency: int = 1,
    tenant: str = "default",
    keep: bool = False,
    verbose: bool = False,
) -> int:
    """Run the trials, print the table, write the JSON; 0 when every guarantee held,
    1 when one broke, 2 when the test could not be carried out."""
    try:
        json.loads(input)
    except ValueError as exc:
        console.print(f"[red]--input is not JSON: {exc}[/]")
        return 2
    if kill_db and not is_embedded(db):
        console.print(
            "[red]--kill-db kills the database server, so it needs one the test starts "
            "itself: --db embedded-postgres (options as a query: "
            "embedded-postgres?synchronous_commit=off)[/]"
        )
        return 2
    pg = LocalPostgres() if is_embedded(db) else None
    url = pg.url(db) if pg is not None else db
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="wayline-killtest-") as tmp:
        reference = wayline.connect(f"sqlite:///{Path(tmp) / 'reference.db'}?synchronous=OFF")
        setup = Setup(
            graph, url, input, tenant, Path(tmp), seed, kill_db, concurrency, reference=reference
        )
        try:
            with _store(setup) as store:
                app = load_target(graph, store)
            results = _run_all(console, setup, app, modes, trials, runs, rng, pg)
        except WaylineError as exc:
            console.print(f"[red]{exc}[/]")
            return 2
        finally:
            reference.close()
            if not keep and pg is None:
                _purge(setup)
    shown = db if pg is None else f"{db} (a private PostgreSQL)"
    report = summary(results, graph=graph, db=shown, seed=seed, kill_db=kill_db, runs=runs)
    console.print(render(report))
    for line in [*(detail_lines(report) if verbose else []), *drift_lines(report)]:
        console.print(line, highlight=False, markup=False)
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2))
        console.print(f"wrote {json_path}")
    return 0 if report["ok"] else 1


def _run_all(
    console: Console,
    setup: Setup,
    app: Target,
    modes: Sequence[str],
    trials: int,
    runs: int,
    rng: random.Random,
    pg: LocalPostgres | None,
) -> list[TrialResult]:
    results: list[TrialResult] = []
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("kill test", total=len(modes) * trials)
        for mode in modes:
            progress.update(bar, description=f"{mode}: uninterrupted run")
            base = _baseline(setup, app, mode)
            plans = _plans(base, trials, rng)
            for i, plan in enumerate(plans):
                progress.update(bar, description=f"{mode}: trial {i + 1}/{trials}")
                if runs > 1:
                    results.append(run_fleet(setup, app, base, mode, i, runs, rng, pg))
                else:
                    results.append(run_trial(setup, app, base, mode, i, plan, pg))
                progress.advance(bar)
    return results
