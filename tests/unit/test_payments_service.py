"""The crash test's payments service: charges once per key, counts durably, and fails on
cue (a dropped response, a SIGKILL of the client after the commit)."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wayline.demo.payment_flow import control, find_charge, post_charge
from wayline.demo.payments import PaymentsService


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[PaymentsService]:
    with PaymentsService(tmp_path / "ledger.db") as service:
        yield service


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        data: dict[str, Any] = json.loads(resp.read())
        return data


def test_a_charge_without_a_key_charges_every_time(svc: PaymentsService) -> None:
    a = post_charge(svc.url, 4200, "cus_42")
    b = post_charge(svc.url, 4200, "cus_42")
    assert a["id"] != b["id"] and not a["deduplicated"] and not b["deduplicated"]
    assert get(f"{svc.url}/stats") == {"charges": 2, "requests": 2, "deduplicated": 0}
    assert [c["id"] for c in get(f"{svc.url}/charges")["charges"]] == [a["id"], b["id"]]


def test_a_key_seen_before_returns_the_same_charge(svc: PaymentsService) -> None:
    req = urllib.request.Request(
        f"{svc.url}/charges",
        json.dumps({"amount": 4200, "customer": "cus_42"}).encode(),
        {"Content-Type": "application/json", "Idempotency-Key": "k-1"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as first:
        assert first.status == 201
        created = json.loads(first.read())
    with urllib.request.urlopen(req, timeout=10) as again:
        assert again.status == 200
        deduped = json.loads(again.read())
    assert deduped == {**created, "deduplicated": True}
    assert created["idempotency_key"] == "k-1" and created["deduplicated"] is False
    assert get(f"{svc.url}/stats") == {"charges": 1, "requests": 2, "deduplicated": 1}
    charge = find_charge(svc.url, "k-1")
    assert charge is not None and charge["id"] == created["id"]
    assert find_charge(svc.url, "k-2") is None


def test_a_key_reused_for_another_amount_is_refused(svc: PaymentsService) -> None:
    post_charge(svc.url, 4200, "cus_42", "k-1")
    with pytest.raises(urllib.error.HTTPError) as err:
        post_charge(svc.url, 9900, "cus_42", "k-1")
    assert err.value.code == 409
    assert svc.ledger.stats()["charges"] == 1


@pytest.mark.parametrize(
    "body", [{"amount": 0, "customer": "c"}, {"amount": True, "customer": "c"}, {"amount": 5}]
)
def test_a_malformed_charge_is_a_400(svc: PaymentsService, body: dict[str, Any]) -> None:
    req = urllib.request.Request(f"{svc.url}/charges", json.dumps(body).encode(), method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 400
    assert svc.ledger.stats() == {"charges": 0, "requests": 0, "deduplicated": 0}


def test_drop_response_commits_then_closes_without_a_reply(svc: PaymentsService) -> None:
    assert control(svc.url, drop_response=True) == {"drop_response": True, "kill_pid": None}
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError, urllib.error.URLError)):
        post_charge(svc.url, 4200, "cus_42", "k-1")
    # the charge was committed before the connection closed; a retry under the key finds it
    assert svc.ledger.stats()["charges"] == 1
    again = post_charge(svc.url, 4200, "cus_42", "k-1")
    assert again["deduplicated"] is True
    assert get(f"{svc.url}/stats") == {"charges": 1, "requests": 2, "deduplicated": 1}
    # one-shot: the next request gets its response
    assert not post_charge(svc.url, 100, "cus_7")["deduplicated"]


def test_counts_survive_a_restart(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    with PaymentsService(ledger) as svc:
        post_charge(svc.url, 4200, "cus_42", "k-1")
        post_charge(svc.url, 4200, "cus_42", "k-1")
        post_charge(svc.url, 100, "cus_7")
    with PaymentsService(ledger) as svc:
        assert get(f"{svc.url}/stats") == {"charges": 2, "requests": 3, "deduplicated": 1}
        assert post_charge(svc.url, 4200, "cus_42", "k-1")["deduplicated"] is True


def test_standalone_process_writes_its_port_and_keeps_the_ledger(tmp_path: Path) -> None:
    ledger, port_file = tmp_path / "ledger.db", tmp_path / "port"
    argv = [sys.executable, "-m", "wayline.demo.payments", "--ledger", str(ledger)]
    proc = subprocess.Popen([*argv, "--port-file", str(port_file)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert proc.poll() is None, "the service exited"
            assert time.monotonic() < deadline, "no port file"
            time.sleep(0.01)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        post_charge(url, 4200, "cus_42", "k-1")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    with PaymentsService(ledger) as svc:  # what the process committed is on disk
        assert svc.ledger.stats()["charges"] == 1


CLIENT = """
import json, os, sys, urllib.request
from wayline.demo.payment_flow import control, post_charge
url = sys.argv[1]
control(url, kill_pid=os.getpid())
print("armed", flush=True)
post_charge(url, 4200, "cus_42", "k-kill")
print("got a response", flush=True)  # never: the service kills this process first
"""


def test_kill_after_commit_kills_the_client_before_it_hears_back(svc: PaymentsService) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CLIENT, svc.url], capture_output=True, text=True, timeout=30
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert child.stdout == "armed\n"
    assert svc.ledger.stats() == {"charges": 1, "requests": 1, "deduplicated": 0}
    assert find_charge(svc.url, "k-kill") is not None
    assert get(f"{svc.url}/control") == {"drop_response": False, "kill_pid": None}


def test_control_rejects_a_bad_pid(svc: PaymentsService) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        control(svc.url, kill_pid=1)
    assert err.value.code == 400


def test_control_refuses_a_process_its_harness_did_not_start(svc: PaymentsService) -> None:
    stranger = subprocess.Popen(  # not our child: started by a shell that exits at once
        ["sh", "-c", "sleep 30 & echo $!"], stdout=subprocess.PIPE, text=True
    )
    assert stranger.stdout is not None
    pid = int(stranger.stdout.readline())
    stranger.wait(timeout=10)
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            control(svc.url, kill_pid=pid)
        assert err.value.code == 403
        assert get(f"{svc.url}/control")["kill_pid"] is None  # nothing armed
    finally:
        subprocess.run(["kill", str(pid)], check=False)
