"""Notifications on SQLite and PostgreSQL: a local webhook receiver counts what it is told.

Each notification is an effect, written with the commit that moves the run: the receiver
gets exactly one per waiting approval and per finished run, across a worker SIGKILLed
mid-run; a refused delivery is retried with backoff under the same key, and one refused
for good is FAILED, visible with the run's effects.
"""

from __future__ import annotations

import collections
import http.server
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from test_wakeups import FINANCE
from waiting import wait_until

import wayline
from wayline import Wayline
from wayline.worker.notify import WebhookNotifier, sign

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import wakeup_graphs  # noqa: E402

NOTIFIED = f"{HERE / 'wakeup_graphs.py'}:notified"
SECRET = "s3cret"


class Receiver:
    """A webhook receiver that counts: every POST, its event and key, whether its
    signature holds; it refuses (500) the first ``refuse`` of them."""

    def __init__(self, refuse: int = 0) -> None:
        self.posts: list[dict[str, Any]] = []
        self.refuse = refuse
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                stamp = self.headers["X-Wayline-Timestamp"]
                outer.posts.append(
                    {
                        "event": self.headers["X-Wayline-Event"],
                        "key": self.headers["X-Wayline-Key"],
                        "signed": self.headers["X-Wayline-Signature"] == sign(SECRET, stamp, body),
                        "body": json.loads(body),
                    }
                )
                refused = len(outer.posts) <= outer.refuse
                self.send_response(500 if refused else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def events(self, run_id: str) -> collections.Counter[str]:
        return collections.Counter(p["event"] for p in self.posts if p["body"]["run_id"] == run_id)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def spawn(procs: list[Any], url: str, side: Path, hook: str, name: str) -> Any:
    log = open(side / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    cmd = [sys.executable, "-m", "wayline.cli.main", "worker", NOTIFIED, "--db", url]
    cmd += ["--lease", "1", "--poll", "0.1", "--webhook", hook, "--webhook-secret", SECRET]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    procs.append(proc)
    wait_until(lambda: b"serving" in (side / f"{name}.log").read_bytes(), f"{name} to start")
    return proc


def test_one_notification_per_approval_and_per_finished_run_across_a_kill(
    url: str, side: Path, receiver: Receiver, procs: list[Any]
) -> None:
    store = wayline.connect(url)
    client = Wayline(store)
    app = wakeup_graphs.build_notified().compile(store)
    (side / "block-prepare").write_text("")
    first = spawn(procs, url, side, receiver.url, "first")
    client.start(app, {}, run_id="refund-1")
    wait_until(lambda: list(side.glob("preparing-*")), "the first worker to be mid-run")
    first.send_signal(signal.SIGKILL)
    first.wait()
    spawn(procs, url, side, receiver.url, "second")
    wait_until(lambda: receiver.events("refund-1")["approval.requested"], "the approval notice")
    (notice,) = [p for p in receiver.posts if p["event"] == "approval.requested"]
    assert notice["signed"] and notice["body"]["approvals"][0]["approvers"] == ["finance"]
    (question,) = client.pending("refund-1")
    assert notice["body"]["approvals"][0]["digest"] == question.digest
    client.resume("refund-1", {"approved": True}, actor=FINANCE, digest=question.digest)
    wait_until(lambda: receiver.events("refund-1")["run.ended"], "the end notice")
    assert client.get("refund-1").status == "done"
    assert receiver.events("refund-1") == {"approval.requested": 1, "run.ended": 1}
    assert all(p["signed"] for p in receiver.posts)
    ended = next(p for p in receiver.posts if p["event"] == "run.ended")["body"]
    assert ended["status"] == "done" and ended["run_id"] == "refund-1"
    expected = [("approval.requested", "SUCCEEDED"), ("run.ended", "SUCCEEDED")]
    wait_until(  # the sender records the delivery just after the receiver answered
        lambda: sorted((e.name, e.status) for e in _notices(client, "refund-1")) == expected,
        "both deliveries to be recorded",
    )
    store.close()


def test_a_refused_delivery_is_retried_then_failed_for_good(url: str) -> None:
    app = wakeup_graphs.build_sleeper().compile(url)
    client = Wayline(app.store)
    flaky, down = Receiver(refuse=2), Receiver(refuse=10**6)
    try:
        for hook, run_id, attempts in ((flaky, "flaky", 3), (down, "down", 3)):
            notifier = WebhookNotifier(
                url=hook.url, secret=SECRET, initial_delay=0.05, max_attempts=3
            )
            serving = _serve(app, notifier)
            try:
                client.start(app, {"seconds": 0}, run_id=run_id)
                wait_until(partial(_settled, client, run_id), f"{run_id}'s notice to settle")
            finally:
                serving.stop()
            assert len(hook.posts) == attempts and len({p["key"] for p in hook.posts}) == 1
        (ok,) = _notices(client, "flaky")
        assert ok.status == "SUCCEEDED" and ok.attempt == 3
        (failed,) = _notices(client, "down")
        assert failed.status == "FAILED" and failed.attempt == 3
        assert failed.error is not None and "500" in failed.error
    finally:
        flaky.close()
        down.close()


def _serve(app: Any, notifier: WebhookNotifier) -> Any:
    config = wayline.WorkerConfig(poll_interval=0.05, lease_seconds=5, notifier=notifier)
    worker = wayline.Worker(app.store, app, config)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()

    class Handle:
        def stop(self) -> None:
            worker.stop()
            thread.join(30)

    return Handle()


def _notices(client: Wayline, run_id: str) -> list[Any]:
    return [e for e in client.store.list_effects("default", run_id) if e.kind == "notify"]


def _settled(client: Wayline, run_id: str) -> bool:
    return _notice(client, run_id) in ("SUCCEEDED", "FAILED")


def _notice(client: Wayline, run_id: str) -> str | None:
    found = _notices(client, run_id)
    return found[0].status if found else None
