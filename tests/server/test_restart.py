"""A server restart in the middle of a stream: the run goes on under the new server's
worker, and the SDK's reconnect (with Last-Event-ID) gets every event exactly once."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

from harness import Running, start
from langgraph_sdk import get_sync_client


def test_server_restart_mid_stream_loses_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    servers: list[Running] = [start(url)]
    port = int(servers[0].url.rsplit(":", 1)[1])
    c = get_sync_client(url=servers[0].url, api_key=servers[0].keys["alice"], timeout=30.0)
    tid = c.threads.create()["thread_id"]

    def restart() -> None:
        servers[0].stop()  # its worker stops at a step boundary and releases the run
        servers.append(start(url, port=port))

    restarter = threading.Thread(target=restart)
    parts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK warns as it reconnects
        for part in c.runs.stream(tid, "slow", input={"n": 0, "until": 30}, stream_mode="values"):
            parts.append(part)
            if len(parts) == 4:
                restarter.start()
    restarter.join(30)
    try:
        assert len(servers) == 2
        ns = [p.data["n"] for p in parts if p.event == "values"]
        assert ns == list(range(31))  # every step once: none lost, none repeated
        ids = [int(p.id) for p in parts if p.event == "values" and p.id is not None]
        assert ids == list(range(1, 32))
        owners = {d.fencing_token for d in servers[1].store.load_deltas("acme", tid, -1, 30)}
        assert len(owners) == 2  # two leases wrote the run: one per server's worker
        assert c.threads.get(tid)["status"] == "idle"
    finally:
        servers[-1].stop()
