"""agent-chat-ui (langchain-ai's reference chat front end, built from its source) pointed at
``wayline serve``, driven in headless Chromium (Debian's /usr/bin/chromium, through
Playwright): a user types a message, sees the reply's tokens arrive while the run is still
going, approves the interrupt the reply waits on, reloads the page and finds the thread.

    python bench/chat_ui.py --ui PATH/TO/agent-chat-ui [--shots docs/img]

Not part of the test suite: building the UI takes minutes and hundreds of megabytes of npm
packages. Build it first, pointed at the API this script serves (port 48129):

    git clone https://github.com/langchain-ai/agent-chat-ui && cd agent-chat-ui
    npm install
    NEXT_PUBLIC_API_URL=http://127.0.0.1:48129 NEXT_PUBLIC_ASSISTANT_ID=agent \
        node node_modules/next/dist/bin/next build

Offline (no fonts.googleapis.com), ``next build`` fails fetching the Inter font of
``src/app/layout.tsx``: replace ``Inter(...)`` there with ``{ className: "font-sans" }``
(the only change made to the UI's source for docs/img/chat-*.png).

The script starts ``wayline serve agent=bench/chat_ui_graph.py:graph --dev --cors-origin
http://localhost:3129`` on a fresh SQLite file and ``next start -p 3129`` in the UI's
directory, and stops both. It prints what it checked and exits 1 when a check fails;
screenshots go to ``--shots``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent
ROOT = HERE.parent
API_PORT = 48129
UI_PORT = 3129
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: its process exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {timeout}s")


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        raise SystemExit(1)


def thread_status(api: str) -> dict[str, Any]:
    threads = httpx.post(f"{api}/threads/search", json={"limit": 1}, timeout=5).json()
    return threads[0] if threads else {}


def drive(ui: str, api: str, shots: Path) -> None:
    from chat_ui_graph import REPLY
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(ui)
        box = page.locator("textarea").first
        box.wait_for(timeout=60_000)
        box.fill("Hello, please draft a reply")
        box.press("Enter")

        # tokens arrive before the run ends: part of the reply shows, the thread is busy
        page.get_by_text("token3", exact=False).first.wait_for(timeout=60_000)
        shown = page.locator("body").inner_text()
        busy = thread_status(api).get("status")
        page.screenshot(path=str(shots / "chat-tokens.png"))
        check("token3" in shown and REPLY not in shown, "a part of the reply shows")
        check(busy == "busy", f"while the run is still going (thread {busy})")

        # the reply waits on an approval: approve it in the UI
        approve = page.get_by_role("button", name="Approve")
        approve.first.wait_for(timeout=60_000)
        page.screenshot(path=str(shots / "chat-interrupt.png"))
        check(thread_status(api).get("status") == "interrupted", "the run waits on an approval")
        approve.first.click()
        page.get_by_text("reply approved: sent").first.wait_for(timeout=60_000)
        thread = thread_status(api)
        check(thread.get("status") == "idle", "approved: the run went on to its end")

        # reload: the thread is still there, whole
        url = page.url
        check("threadId=" in url, "the page names the thread")
        page.reload()
        page.get_by_text("reply approved: sent").first.wait_for(timeout=60_000)
        text = page.locator("body").inner_text()
        page.screenshot(path=str(shots / "chat-reloaded.png"))
        check("Hello, please draft a reply" in text and "token59" in text, "reloaded: intact")
        values = thread.get("values") or {}
        kinds = [m.get("type") for m in values.get("messages", [])]
        check(kinds == ["human", "ai", "ai"], f"the state holds the turn once ({kinds})")
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ui", required=True, help="the built agent-chat-ui directory")
    ap.add_argument("--shots", default=str(ROOT / "docs" / "img"))
    args = ap.parse_args()
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    api = f"http://127.0.0.1:{API_PORT}"
    ui = f"http://localhost:{UI_PORT}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), *sys.path])}
    with tempfile.TemporaryDirectory(prefix="wayline-chat-ui-") as tmp:
        server = subprocess.Popen(
            [sys.executable, "-m", "wayline.cli.main", "serve", "agent=chat_ui_graph.py:graph",
             "--db", f"sqlite:///{Path(tmp) / 'chat.db'}", "--port", str(API_PORT), "--dev",
             "--cors-origin", ui],
            cwd=HERE, env=env,
        )  # fmt: skip
        front = subprocess.Popen(
            ["node", "node_modules/next/dist/bin/next", "start", "-p", str(UI_PORT)],
            cwd=args.ui,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "NEXT_TELEMETRY_DISABLED": "1"},
        )
        try:
            wait_http(f"{api}/ok", server)
            wait_http(ui, front)
            sys.path.insert(0, str(HERE))
            drive(ui, api, shots)
        finally:
            for proc in (front, server):
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()


if __name__ == "__main__":
    main()
