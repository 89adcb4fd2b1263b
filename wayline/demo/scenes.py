"""``wayline demo``: run an agent, SIGKILL its worker mid-run, resume it in a fresh process,
and show that the result equals an uninterrupted run."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

import wayline
from wayline.demo.support_agent import DRAFT_ROUNDS, build_graph, demo_input

__all__ = ["run_demo"]

RUN_ID = "ticket-1042"


def run_demo(db: Path | None, kill_at_round: int, console: Console) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="wayline-demo-"))
    db = db or workdir / "wayline-demo.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{db.resolve()}"
    log, marker = workdir / "executions.log", workdir / "killpoint"
    console.print(
        Panel.fit(
            f"[bold]wayline demo[/]: a support agent ({DRAFT_ROUNDS} draft rounds) on {url}\n"
            "Its worker is killed with SIGKILL mid-run; a fresh process resumes it.",
            border_style="cyan",
        )
    )

    reference = build_graph("sqlite:///:memory:")
    ref_cfg = {"configurable": {"thread_id": RUN_ID}}
    reference.invoke(demo_input(), ref_cfg)
    ref_digest = reference.state_digest(ref_cfg)
    console.print(f"1. Uninterrupted reference run: final state digest [bold]{ref_digest[:16]}[/]")

    worker = [sys.executable, "-m", "wayline.demo.scenes_worker", url, RUN_ID, str(log)]
    child = subprocess.Popen(
        [*worker, "--block-at-round", str(kill_at_round), "--marker", str(marker)],
        stdout=subprocess.DEVNULL,
    )
    if not _wait_for(marker, child, timeout=60):
        console.print("[red]the worker exited before reaching the kill point[/]")
        return 1
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    console.print(
        f"2. Worker pid {child.pid} started the run; killed with [bold red]SIGKILL[/] inside "
        f"draft round {kill_at_round} (exit status {child.returncode})."
    )

    store = wayline.connect(url)
    run = store.get_run("default", RUN_ID)
    assert run is not None
    console.print(
        f"3. The store says: status [bold]{run.status}[/], last committed step "
        f"[bold]{run.step}[/], next: {', '.join(run.next_nodes)}"
    )

    done = subprocess.run([*worker, "--resume"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        console.print(f"[red]resume failed:[/]\n{done.stderr}")
        return 1
    result = json.loads(done.stdout)
    console.print(
        f"4. A fresh process resumed from step {run.step + 1} and finished: "
        f"{result['rounds']} draft rounds."
    )
    runs = _executions(log)
    console.print(_executions_table(runs))
    again = [f"{node} round {rnd}" for (node, rnd), who in runs.items() if len(who) > 1]
    same = result["digest"] == ref_digest
    verdict = "[bold green]equal[/]" if same else "[bold red]DIFFERENT[/]"
    console.print(
        Panel.fit(
            f"Final state digest {result['digest'][:16]} vs uninterrupted {ref_digest[:16]}: "
            f"{verdict}\nRan twice: {', '.join(again) or 'nothing'} "
            f"(of {len(runs)} node executions); committed steps 0-{run.step} were not redone.",
            border_style="green" if same else "red",
        )
    )
    console.print(f"[dim]store: {db}[/]")
    charged_once = _payments(workdir, console)
    approved_once = _approval(url, console)
    return 0 if same and charged_once and approved_once else 1


def _approval(url: str, console: Console) -> bool:
    """Part three: a refund agent that waits for an authorized, audited approval."""
    from wayline.control import Actor
    from wayline.demo.refund_agent import build_refund_agent, claim_input
    from wayline.errors import ApprovalRefused

    console.print(
        Panel.fit(
            "[bold]Part three[/]: a refund agent proposes a refund and waits for finance.\n"
            "The proposal is recorded with its digest, who may decide and an expiry.",
            border_style="cyan",
        )
    )
    refunds: dict[str, dict[str, object]] = {}

    def refund(key: str, amount: int, customer: str) -> dict[str, object]:
        return refunds.setdefault(key, {"id": f"re_{len(refunds) + 1}", "amount": amount})

    store = wayline.connect(url)
    app = build_refund_agent(store, refund)
    cfg = {"configurable": {"thread_id": "claim-9"}}
    (question,) = app.invoke(claim_input(), cfg)["__interrupt__"]
    console.print(
        f"waiting: refund {question.value['refund']} to {question.value['customer']}, "
        f"approvers {list(question.approvers or ())}, digest {question.digest[:12]}"
    )
    client = wayline.Wayline(store)
    attempts = [
        (Actor(id="ivan", roles=("support",)), question.digest),
        (Actor(id="fatima", roles=("finance",)), "0" * 64),
        (Actor(id="fatima", roles=("finance",)), question.digest),
    ]
    for actor, digest in attempts:
        try:
            client.resume("claim-9", {"approved": True}, actor=actor, digest=digest)
            console.print(f"  {actor.id}: [green]accepted[/]")
        except ApprovalRefused as exc:
            console.print(f"  {actor.id}: [yellow]refused ({exc.reason})[/]")
    final = app.invoke(None, cfg)
    table = Table(title="audit log of claim-9")
    for col in ("actor", "action", "outcome", "detail"):
        table.add_column(col)
    for entry in client.audit("claim-9"):
        table.add_row(entry.actor, entry.action, entry.outcome, entry.detail or "")
    console.print(table)
    ok = final.get("refund", {}).get("id") == "re_1" and len(refunds) == 1
    console.print(
        Panel.fit(
            f"refund {final.get('refund')} issued once; outbox: {final.get('outbox')}"
            if ok
            else "[bold red]the refund did not go through as approved[/]",
            border_style="green" if ok else "red",
        )
    )
    return ok


def _payments(workdir: Path, console: Console) -> bool:
    """Part two: a charge through a local payments service that kills the worker after it
    committed the charge and before it answered: with and without ``ctx.effect``."""
    from wayline.demo.crashtest import run_trial

    console.print(
        Panel.fit(
            "[bold]Part two[/]: prepare -> charge -> finalize against a local payments service "
            "(HTTP on 127.0.0.1).\nThe service commits the charge, then SIGKILLs the worker "
            "before answering; a fresh process resumes the run.",
            border_style="cyan",
        )
    )
    table = Table(title="Charges the provider made (it counts them in its own ledger)")
    for col in ("charge node", "charges", "requests", "run"):
        table.add_column(col)
    results = {}
    for strategy, label in (("naive", "plain HTTP call, no key"), ("wayline", "ctx.effect")):
        r = run_trial(workdir / f"payments-{strategy}", strategy, "provider_committed", "sync")
        results[strategy] = r
        style = "bold green" if r.charges == 1 else "bold red"
        table.add_row(label, f"[{style}]{r.charges}[/]", str(r.requests), r.status or r.error)
    console.print(table)
    once = results["wayline"].charges == 1 and results["wayline"].status == "done"
    note = (
        "ctx.effect: the key was durable before the request, the resend carried it, the "
        "provider deduplicated it: [bold green]charged once[/]."
        if once
        else "[bold red]ctx.effect charged more than once[/]"
    )
    console.print(Panel.fit(note, border_style="green" if once else "red"))
    return once


def _wait_for(marker: Path, child: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text():
            return True
        if child.poll() is not None:
            return False
        time.sleep(0.01)
    child.kill()
    return False


def _executions(log: Path) -> dict[tuple[str, int], list[int]]:
    """(node, round) -> pids of the processes that executed it, in order."""
    runs: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
    for line in log.read_text().splitlines():
        node, rnd, pid = line.split()
        runs[(node, int(rnd))].append(int(pid))
    return runs


def _executions_table(runs: dict[tuple[str, int], list[int]]) -> Table:
    pids = sorted({p for v in runs.values() for p in v})
    table = Table(title="Node executions (from a log that survives the kill)")
    table.add_column("node")
    table.add_column("round", justify="right")
    table.add_column("executions", justify="right")
    table.add_column("processes")
    for (node, rnd), who in runs.items():
        again = len(who) > 1
        table.add_row(
            node,
            str(rnd),
            f"[bold yellow]{len(who)}[/]" if again else str(len(who)),
            ", ".join(f"#{pids.index(p) + 1}" for p in who),
        )
    return table
