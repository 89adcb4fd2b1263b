"""The dashboard in a real headless browser (Debian's chromium, driven by Playwright):
sign in with a key, see runs, open a run's timeline, approve a pending approval, resolve a
parked effect, and see each change. Screenshots go to $WAYLINE_SCREENSHOTS (docs/img was
made this way) or the test's temp dir."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import Running, start, until, worker_process
from langgraph_sdk import get_sync_client

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"no browser at {CHROMIUM}: install Debian's chromium (sudo apt-get update && "
        "sudo apt-get install -y chromium) to run the dashboard test",
        allow_module_level=True,
    )

ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server whose runs are executed by real worker processes: one SIGKILLed inside a
    charge (so its run parks on an unknown outcome), one that survives."""
    url = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'ui.db'}"
    server = start(url, workers=0)
    c = get_sync_client(url=server.url, api_key=server.keys["alice"])
    pay = c.threads.create()["thread_id"]
    c.runs.create(pay, "pay", input={"amount": 700})
    doomed = worker_process(url, "pay", kill_in_charge=True)
    assert doomed.wait(30) == -signal.SIGKILL
    # metrics flushed five times a second, a finished run verified ten times a second
    options = ("--metrics-every", "0.2", "--verify-rate", "600")
    survivor = worker_process(url, "pay", "slow", "refund", options=options)
    try:
        slow = c.threads.create()["thread_id"]
        c.runs.wait(slow, "slow", input={"n": 0, "until": 6})
        refund = c.threads.create()["thread_id"]
        c.runs.wait(refund, "refund", input={"amount": 4200})
        until(lambda: c.threads.get(pay)["status"] == "error", what="the pay run to park")
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        with db:  # a divergence planted in a finished run: its committed digest changed
            db.execute("UPDATE runs SET state_digest = ? WHERE run_id = ?", ("0" * 64, slow))
        db.close()
        yield {"server": server, "client": c, "pay": pay, "slow": slow, "refund": refund}
    finally:
        survivor.send_signal(signal.SIGTERM)
        survivor.wait(30)
        server.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(os.environ.get("WAYLINE_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_dashboard_in_a_browser(site: dict[str, Any], shots: Path) -> None:
    server: Running = site["server"]
    c = site["client"]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{server.url}/ui/runs")
        assert page.url.endswith("/ui/login")  # signed out: sign in first
        page.fill("input[name=key]", "wl_bad_key")
        page.click("button:has-text('Sign in')")
        assert "unknown API key" in page.locator(".err").inner_text()
        page.fill("input[name=key]", server.keys["alice"])
        page.click("button:has-text('Sign in')")
        page.wait_for_url(re.compile(r".*/ui/runs$"))
        for tid in (site["pay"], site["slow"], site["refund"]):
            assert page.locator(f"table.runs >> text={tid}").count() == 1
        page.select_option("select[name=status]", "parked")
        page.click("button:has-text('Filter')")  # a navigation: wait for the new page
        expect = sync_api.expect
        expect(page.locator("table.runs tr")).to_have_count(2)  # the header, the parked run
        page.goto(f"{server.url}/ui/runs")
        page.screenshot(path=str(shots / "runs.png"), full_page=True)

        # a run's page: its timeline, state at a step, a diff, the bytes chart
        page.click(f"text={site['slow']}")
        expect(page.locator("table.timeline tr")).to_have_count(1 + 7)  # steps 0..6
        assert page.locator("#bytes-chart rect").count() > 6
        page.fill("input[name=a]", "2")
        page.fill("input[name=b]", "4")
        page.click("button:has-text('Diff')")
        diff = page.locator("table.diff").inner_text()
        assert "+2 items" in diff and "changed" in diff
        page.screenshot(path=str(shots / "run.png"), full_page=True)

        # the approvals inbox: approve as alice (role finance)
        page.goto(f"{server.url}/ui/approvals")
        assert page.locator(f"table.approvals >> text={site['refund']}").count() == 1
        page.screenshot(path=str(shots / "approvals.png"), full_page=True)
        page.click("table.approvals >> button:has-text('Approve')")
        page.wait_for_selector("text=approved as alice")
        until(lambda: c.threads.get(site["refund"])["status"] == "idle", what="the refund")
        state = c.threads.get_state(site["refund"])["values"]
        assert state["decision"]["approved"] is True and state["receipt"]["amount"] == 4200
        page.goto(f"{server.url}/ui/runs/{site['refund']}")
        audit = page.locator("body").inner_text()
        assert "alice" in audit and "accepted" in audit

        # the reconciliation queue: the parked charge, resolved as succeeded
        page.goto(f"{server.url}/ui/reconcile")
        assert page.locator(f"text={site['pay']}").count() >= 1
        assert "UNKNOWN" in page.locator("table.effects").inner_text()
        page.screenshot(path=str(shots / "reconcile.png"), full_page=True)
        page.fill("input[name=result]", '{"id": "ch_checked", "amount": 700}')
        page.click("button:has-text('Resolve: succeeded')")
        page.wait_for_selector("text=is now SUCCEEDED")
        until(lambda: c.threads.get(site["pay"])["status"] == "idle", what="the pay run")
        receipt = c.threads.get_state(site["pay"])["values"]["receipt"]
        assert receipt == {"id": "ch_checked", "amount": 700}
        page.goto(f"{server.url}/ui/reconcile")
        assert "nothing waits for an operator" in page.content()
        page.goto(f"{server.url}/ui/workers")
        page.goto(f"{server.url}/ui/audit")
        assert "alice" in page.locator("body").inner_text()

        # the health page: the workers' metrics plotted (the survivor's read of the pay run
        # after the SIGKILL is a recovery), what verification found, the store report
        def health() -> bool:
            page.goto(f"{server.url}/ui/health?window=15")
            text = page.locator("body").inner_text()
            return "recovery=true" in text and site["slow"] in text

        until(health, what="the survivor's recovery read and the divergence on the health page")
        reads = page.locator("table.metric.wayline-reconstruct-duration").inner_text()
        assert "graph=pay, recovery=true" in reads and "recovery=false" in reads
        assert page.locator("svg.histogram").count() >= 5  # histograms of several metrics
        assert "p99" in page.locator("table.metric.wayline-commit-duration").inner_text()
        assert "diverged" in page.locator("table.verify-findings").inner_text()
        finished = page.locator("table.finished-runs").inner_text()
        assert "slow" in finished and "refund" in finished
        assert page.locator("table.bytes-per-step tr").count() > 1
        assert "default" in page.locator("table.store-report").inner_text()
        page.screenshot(path=str(shots / "health.png"), full_page=True)
        browser.close()


def test_session_cookie_and_csrf(site: dict[str, Any]) -> None:
    server: Running = site["server"]
    h = httpx.Client(base_url=server.url)
    signed = h.post("/ui/login", data={"key": server.keys["bob"]})
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    page = h.get("/ui/approvals").text
    assert "not yours" in page or "none" in page  # bob has no finance role
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    no_token = h.post("/ui/approvals/decide", data={"run_id": site["refund"], "choice": "approve"})
    assert no_token.status_code == 403 and "CSRF" in no_token.text
    wrong_origin = h.post(
        "/ui/logout", data={"csrf": csrf.group(1)}, headers={"origin": "http://evil.example"}
    )
    assert wrong_origin.status_code == 403
    other = httpx.Client(base_url=server.url)  # another tenant's key sees none of acme's runs
    other.post("/ui/login", data={"key": server.keys["eve"]})
    assert site["pay"] not in other.get("/ui/runs").text
    assert "no run" in other.get(f"/ui/runs/{site['pay']}").text
