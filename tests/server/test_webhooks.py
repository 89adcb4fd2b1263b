"""``webhook=`` on run creation through ``langgraph-sdk``, on SQLite and PostgreSQL: the
URL is told once that its run ended (and that it waits for an approval), signed with the
server's key; a server without a key refuses ``webhook=`` rather than never calling it. A
cron's ``webhook=`` is told of each tick's run."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from harness import Running, as_dict, make_cron_due, start, until
from langgraph_sdk import get_sync_client
from pg import schema_url

from wayline.worker.notify import sign

SECRET = "hook-key"


class Receiver:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                stamp = self.headers["X-Wayline-Timestamp"]
                outer.posts.append(
                    {
                        "event": self.headers["X-Wayline-Event"],
                        "signed": self.headers["X-Wayline-Signature"] == sign(SECRET, stamp, body),
                        "body": json.loads(body),
                    }
                )
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, thread_id: str) -> list[tuple[str, str]]:
        return [
            (p["event"], p["body"]["status"])
            for p in self.posts
            if p["body"]["run_id"] == thread_id and p["signed"]
        ]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def hooked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('hooks') / 'server.db'}"
    else:
        url = schema_url(request.getfixturevalue("pg_base_url"))
    running = start(url, webhook_secret=SECRET)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def test_a_webhook_is_told_once_that_its_run_ended(hooked: Running, receiver: Receiver) -> None:
    c = get_sync_client(url=hooked.url, api_key=hooked.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "simple", input={"n": 0}, webhook=receiver.url)
    c.runs.join(tid, run["run_id"])
    until(lambda: receiver.of(tid), what="the webhook")
    other = c.threads.create()["thread_id"]  # a run without webhook= tells nobody
    c.runs.wait(other, "simple", input={"n": 0})
    again = c.runs.create(tid, "simple", input={"n": 1}, webhook=receiver.url)
    c.runs.join(tid, again["run_id"])
    until(lambda: len(receiver.of(tid)) == 2, what="the second run's webhook")
    assert receiver.of(tid) == [("run.ended", "done"), ("run.ended", "done")]
    assert receiver.of(other) == []


def test_a_langgraph_runs_webhook_is_told_once_that_it_ended(
    hooked: Running, receiver: Receiver
) -> None:
    c = get_sync_client(url=hooked.url, api_key=hooked.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    run = c.runs.create(tid, "lg_configured", input={"items": []}, webhook=receiver.url)
    c.runs.join(tid, run["run_id"])
    until(lambda: receiver.of(tid), what="the webhook")
    again = c.runs.create(tid, "lg_configured", input={"items": []}, webhook=receiver.url)
    c.runs.join(tid, again["run_id"])
    until(lambda: len(receiver.of(tid)) == 2, what="the second run's webhook")
    assert receiver.of(tid) == [("run.ended", "done"), ("run.ended", "done")]
    told = next(p["body"] for p in receiver.posts if p["body"]["run_id"] == tid)
    assert told["graph"] == "lg_configured"


def test_an_approval_is_announced_to_its_webhook(hooked: Running, receiver: Receiver) -> None:
    c = get_sync_client(url=hooked.url, api_key=hooked.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    c.runs.create(tid, "refund", input={"amount": 5}, webhook=receiver.url)
    until(lambda: receiver.of(tid), what="the approval notice")
    assert receiver.of(tid) == [("approval.requested", "interrupted")]
    notice = next(p["body"] for p in receiver.posts if p["body"]["run_id"] == tid)
    assert notice["approvals"][0]["approvers"] == ["finance"]


def test_webhook_needs_a_signing_key(server: Running) -> None:
    c = get_sync_client(url=server.url, api_key=server.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        c.runs.create(tid, "simple", input={"n": 0}, webhook="http://127.0.0.1:9/hook")
    assert refused.value.response.status_code == 422
    assert "--webhook-secret" in refused.value.response.text


def test_a_crons_ticks_tell_its_webhook(hooked: Running, receiver: Receiver) -> None:
    c = get_sync_client(url=hooked.url, api_key=hooked.keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]
    cron = as_dict(c.crons.create_for_thread(tid, "simple", schedule="0 9 * * *",
                                             input={"n": 0}, webhook=receiver.url))  # fmt: skip
    assert cron["payload"]["webhook"] == receiver.url
    make_cron_due(hooked, cron["cron_id"])
    until(lambda: receiver.of(tid), what="the first tick's webhook")
    make_cron_due(hooked, cron["cron_id"])
    until(lambda: len(receiver.of(tid)) == 2, what="the second tick's webhook")
    runs = c.runs.list(tid)
    assert [r["status"] for r in runs] == ["success", "success"]
    assert receiver.of(tid) == [("run.ended", "done"), ("run.ended", "done")]  # once a tick
