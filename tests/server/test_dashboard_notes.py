"""What the dashboard's run page says, read as text (no browser): after a normal approval
the timeline says the run was resumed after its decision, not that its nodes may have run
before under another lease; the bytes chart names channels as a reader would, and its
legend stays inside the chart."""

from __future__ import annotations

import re

import httpx
from harness import Running, until
from langgraph_sdk import get_sync_client

from wayline.server.ui.html import bytes_chart, channel_label


def test_the_timeline_after_an_approval_says_so(sqlite_server: Running) -> None:
    c = get_sync_client(url=sqlite_server.url, api_key=sqlite_server.keys["alice"])
    tid = c.threads.create()["thread_id"]
    out = c.runs.wait(tid, "refund", input={"amount": 4200})
    assert isinstance(out, dict)
    (question,) = out["__interrupt__"]
    c.runs.wait(tid, "refund", command={"resume": {"approved": True}})
    until(lambda: c.threads.get(tid)["status"] == "idle", what="the refund to finish")
    ui = httpx.Client(base_url=sqlite_server.url)
    ui.post("/ui/login", data={"key": sqlite_server.keys["alice"]})
    page = ui.get(f"/ui/runs/{tid}").text
    timeline = page[page.index('class="timeline"') :]
    assert "resumed after its approval was decided" in timeline
    assert "may have run before" not in timeline
    assert question["digest"][:16] in page  # the audit shows what was decided


def test_channel_labels_are_readable() -> None:
    assert channel_label("") == "row framing"
    assert channel_label("__join__:a+b:c") == "join a, b → c"
    assert channel_label("__start__") == "start"
    assert channel_label("messages") == "messages"


def test_the_legend_wraps_inside_the_chart() -> None:
    names = [f"channel_with_a_long_name_{i}" for i in range(12)]
    svg = bytes_chart({1: {n: 10 for n in names}, 2: {"": 5, "__join__:a+b:c": 3}}, width=400)
    texts = re.findall(r'<text x="(\d+)" y="(\d+)" font-size="11">([^<]+)</text>', svg)
    legend = [(int(x), int(y), label) for x, y, label in texts if not label.endswith(" B")]
    assert len(legend) == 14 and "__join__" not in svg and "(framing)" not in svg
    for x, _, label in legend:
        assert x + 7 * len(label) <= 400, label  # nothing runs past the right edge
    rows = sorted({y for _, y, _ in legend})
    assert len(rows) > 1
    height = int(re.search(r'height="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert rows[-1] < height  # the last row is inside the picture
