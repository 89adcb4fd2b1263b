"""The on-disk format must not drift by accident: the bytes of a fixed run's deltas and
snapshots are pinned in tests/golden. A deliberate format change regenerates them
(``WAYLINE_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_golden_format.py``) and the
diff of the golden file is what review sees."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import operator
import os
from pathlib import Path
from typing import Annotated, Any, TypedDict

import wayline
from wayline import END, START, Send, StateGraph

GOLDEN = Path(__file__).parent.parent / "golden" / "format_v1.json"


@dataclasses.dataclass(frozen=True)
class Doc:
    title: str
    tags: tuple[str, ...]


wayline.register_type(Doc, "golden.Doc")  # a fixed name: the name is in the stored bytes


class State(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]
    docs: Annotated[list[Doc], operator.add]
    best: Annotated[int, max]
    note: str
    n: int


def run() -> dict[str, Any]:
    g = StateGraph(State, name="golden")
    g.add_node("fan", lambda s: {"n": s["n"] + 1, "note": "x" * 80})
    g.add_node("work", lambda a: {"log": [(a["i"], "w")], "best": a["i"]})
    g.add_node(
        "read",
        lambda s: {"docs": [Doc(f"d{s['n']}", ("a", "b"))], "log": [dt.date(2026, 1, s["n"])]},
    )
    g.add_edge(START, "fan")
    g.add_conditional_edges("fan", lambda s: [Send("work", {"i": s["n"]}), "read"])
    g.add_conditional_edges("read", lambda s: "fan" if s["n"] < 4 else END)
    g.add_edge("work", END)
    store = wayline.connect("sqlite:///:memory:")
    app = g.compile(store, snapshot_every=3, blob_threshold=60)
    app.invoke({"n": 0, "log": []}, {"configurable": {"thread_id": "golden", "tenant": "t"}})
    return {
        "deltas": [d.payload.hex() for d in store.load_deltas("t", "golden", -1, 100)],
        "snapshots": [
            store.load_snapshot("t", "golden", step).payload.hex()  # type: ignore[union-attr]
            for step in (3, 6)
        ],
        "blobs": {b["digest"]: b["payload"].hex() for b in store.dump_run("t", "golden")["blobs"]},
        "digest": app.state_digest({"configurable": {"thread_id": "golden", "tenant": "t"}}),
    }


def test_stored_bytes_match_the_golden_file() -> None:
    produced = run()
    if os.environ.get("WAYLINE_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(produced, indent=1) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert produced == golden, (
        "the on-disk encoding changed: if that is deliberate, regenerate tests/golden with "
        "WAYLINE_UPDATE_GOLDEN=1 and say so in the change"
    )


def test_golden_bytes_still_reconstruct() -> None:
    """Old bytes stay readable: the golden deltas decode with today's code."""
    from wayline.codec import default_codec
    from wayline.graph.checkpoint import decode_results

    golden = json.loads(GOLDEN.read_text())
    blobs = {digest: bytes.fromhex(data) for digest, data in golden["blobs"].items()}
    assert blobs  # the fixture stores a value by reference
    for delta in golden["deltas"]:
        results = decode_results(default_codec, bytes.fromhex(delta), blobs.__getitem__)
        assert all(r.name for r in results)


REDACTED_GOLDEN = Path(__file__).parent.parent / "golden" / "format_v1_redacted.json"


class Labelled(TypedDict, total=False):
    chat: Annotated[list[str], operator.add, wayline.Classified("pii")]
    log: Annotated[list[str], operator.add]
    n: int


def redacted_run() -> dict[str, Any]:
    """Data classes add one value to the format, the tombstone ``Redacted(cls, at)`` (a
    registered dataclass, ext code 12, name "wayline.Redacted") in place of an erased
    value; envelopes, snapshots and unlabelled values are unchanged (format v1)."""
    from wayline.control.erasure import redact_run

    g = StateGraph(Labelled, name="golden-classes")
    g.add_node("step", lambda s: {"chat": [f"c{s['n']}"], "log": [f"l{s['n']}"], "n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= 3 else "step")
    store = wayline.connect("sqlite:///:memory:")
    app = g.compile(store, snapshot_every=2)
    app.invoke({"n": 0}, {"configurable": {"thread_id": "g", "tenant": "t"}})
    redact_run(store, "t", "g", ["pii"], at=1.5)
    return {
        "deltas": [d.payload.hex() for d in store.load_deltas("t", "g", -1, 100)],
        "snapshot": store.load_snapshot("t", "g", 2).payload.hex(),  # type: ignore[union-attr]
    }


def test_redacted_bytes_match_the_golden_file() -> None:
    produced = redacted_run()
    if os.environ.get("WAYLINE_UPDATE_GOLDEN"):
        REDACTED_GOLDEN.write_text(json.dumps(produced, indent=1) + "\n")
    assert produced == json.loads(REDACTED_GOLDEN.read_text()), (
        "the encoding of redacted values changed: regenerate with WAYLINE_UPDATE_GOLDEN=1 "
        "only if that is deliberate"
    )
