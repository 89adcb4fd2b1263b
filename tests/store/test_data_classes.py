"""Data classes on every backend: redacting a class leaves no byte of its values in any
table row (nor, SQLite file, in the database files incl. the WAL) while other classes and
the audit log stay; erasure by subject reaches every run of the subject and nothing else;
a blob another subject's run shares survives; a redacted run is not resumed silently."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from fault_rows import flip_row, pick, restore_row, rows_of, sql
from stored_rows import stored_rows

import wayline
from wayline import END, START, Classified, Redacted, StateGraph
from wayline.control.erasure import subject_digest
from wayline.control.integrity import check_run
from wayline.control.policy import DataPolicy
from wayline.errors import (
    CorruptionError,
    LeaseConflictError,
    RedactedRunError,
    VersionMismatchError,
)
from wayline.store.base import Store
from wayline.store.records import AuditRecord

PII = "PII-9d2f71"
KEEP = "KEEP-4c81e0-ledger"
BIG_PII = "PII-BIG-51aa3e " + "y" * 70_000  # above the blob threshold: stored as a blob


class State(TypedDict):
    msgs: Annotated[list[str], operator.add, Classified("pii")]
    email: Annotated[str, Classified("pii")]
    doc: Annotated[str, Classified("pii")]
    notes: Annotated[list[str], operator.add]
    n: int


def build(store: Store, **compile_args: Any) -> wayline.CompiledGraph:
    def step(s: State) -> dict[str, Any]:
        who = s["email"].split("@")[0] if s.get("email") else "anon"
        return {"msgs": [f"{PII}-{who}-{s['n']}"], "notes": [f"{KEEP}-{s['n']}"], "n": s["n"] + 1}

    g = StateGraph(State)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s["n"] >= 5 else "step")
    return g.compile(store, snapshot_every=2, **compile_args)


def run(app: wayline.CompiledGraph, run_id: str, subject: str, doc: str = BIG_PII) -> None:
    cfg = {"configurable": {"thread_id": run_id, "subject": subject}}
    app.invoke({"n": 0, "msgs": [], "notes": [], "email": f"{subject}@{PII}", "doc": doc}, cfg)


def holding(store: Store, marker: str) -> list[str]:
    return [t for t, row in stored_rows(store) if marker.encode() in row]


def file_bytes(store: Store) -> bytes:
    path = Path(store.path)  # type: ignore[attr-defined]
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def state(app: wayline.CompiledGraph, run_id: str) -> dict[str, Any]:
    return app.get_state({"configurable": {"thread_id": run_id}}).values


def test_redacting_pii_erases_it_from_every_row_and_keeps_the_rest(store: Store) -> None:
    app = build(store)
    run(app, "r1", "alice")
    store.append_audit(AuditRecord("default", "r1", "ops", "note", "kept", detail=KEEP))
    assert {"deltas", "snapshots", "segments"} <= set(holding(store, PII))
    assert holding(store, "PII-BIG") == ["blobs"]
    counts = wayline.Wayline(store).redact("r1", ["pii"])
    assert counts["deltas"] == 6 and counts["snapshots"] >= 2 and counts["blobs"] == 1
    assert holding(store, PII) == [] and holding(store, "PII-BIG") == []
    assert "deltas" in holding(store, KEEP)
    if getattr(store, "path", ":memory:") != ":memory:":
        raw = file_bytes(store)
        assert PII.encode() not in raw and b"PII-BIG" not in raw
        assert KEEP.encode() in raw
    values = state(app, "r1")
    assert values["notes"] == [f"{KEEP}-{i}" for i in range(5)] and values["n"] == 5
    for key in ("msgs", "email", "doc"):
        assert isinstance(values[key], Redacted) and values[key].cls == "pii"
    audit = wayline.Wayline(store).audit("r1")
    assert [a.action for a in audit] == ["note", "redact"] and audit[0].detail == KEEP
    assert json.loads(audit[1].detail or "")["rows"] == counts
    assert store.check_rows("default", "r1")[1] == []  # rewritten rows verify
    report = check_run(store, "default", "r1", app)  # `wayline runs verify`
    assert report.problems == () and report.folded and report.digest_ok is None
    assert wayline.Wayline(store).redact("r1", ["pii"])["deltas"] == 0  # idempotent


def test_erasing_a_subject_reaches_its_runs_and_nothing_else(store: Store) -> None:
    app = build(store)
    for i in range(3):
        run(app, f"alice-{i}", "alice")
    run(app, "bob-0", "bob")  # bob's doc is the same big value: the blob is shared
    client = wayline.Wayline(store)
    receipt = client.erase_subject("alice", classes=["pii"])
    assert receipt["runs"] == ["alice-0", "alice-1", "alice-2"]
    assert receipt["rows"]["deltas"] == 18 and receipt["rows"]["blobs"] == 0
    assert holding(store, f"{PII}-alice") == [] and holding(store, "alice@") == []
    assert "deltas" in holding(store, f"{PII}-bob")
    if getattr(store, "path", ":memory:") != ":memory:":  # the files too, WAL included
        raw = file_bytes(store)
        assert f"{PII}-alice".encode() not in raw and b"alice@" not in raw
        assert f"{PII}-bob".encode() in raw and KEEP.encode() in raw
    bob = state(app, "bob-0")
    assert bob["doc"] == BIG_PII and bob["msgs"][0] == f"{PII}-bob-0"  # untouched
    for i in range(3):
        assert isinstance(state(app, f"alice-{i}")["msgs"], Redacted)
        assert state(app, f"alice-{i}")["notes"][4] == f"{KEEP}-4"
    (line,) = client.audit(receipt["subject"])
    assert line.action == "erase_subject" and '"alice"' not in (line.detail or "")
    assert json.loads(line.detail or "")["rows"] == receipt["rows"]
    exported = client.export_subject("alice")
    assert len(exported["runs"]) == 3 and PII not in json.dumps(exported)
    # Whole-run erasure: every row of every run of the subject.
    receipt = client.erase_subject("alice")
    assert receipt["mode"] == "purge" and receipt["rows"]["deltas"] == 18
    assert store.runs_of_subject("default", "alice") == []
    assert not any(b"alice-" in row for t, row in stored_rows(store) if t != "audit")
    assert state(app, "bob-0")["doc"] == BIG_PII  # the shared blob survived both erasures
    assert client.export_subject("bob")["runs"][0]["runs"][0]["subject"] == "bob"


def test_a_redacted_run_is_not_resumed_unless_its_graph_says_it_can(store: Store) -> None:
    app = build(store)
    run(app, "r1", "alice")
    wayline.Wayline(store).redact("r1", ["pii"])
    cfg = {"configurable": {"thread_id": "r1"}}
    with pytest.raises(RedactedRunError, match="continue_without"):
        app.invoke({"n": 0}, cfg)
    tolerant = build(store, continue_without=["pii"])
    tolerant.invoke(None, cfg)  # allowed (the run is done: nothing to run)
    assert store.get_run("default", "r1").status == "done"  # type: ignore[union-attr]


def test_classes_are_recorded_with_the_run_and_not_silently_relabelled(store: Store) -> None:
    app = build(store)
    run(app, "r1", "alice")
    recorded = store.get_run("default", "r1")
    assert recorded is not None and recorded.subject == "alice"
    assert dict(recorded.classes) == {"doc": "pii", "email": "pii", "msgs": "pii"}

    class Relabelled(TypedDict):
        msgs: Annotated[list[str], operator.add]
        email: Annotated[str, Classified("pii")]
        doc: Annotated[str, Classified("pii")]
        notes: Annotated[list[str], operator.add]
        n: int

    g = StateGraph(Relabelled)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    relabelled = g.compile(store, version=app.version, name=app.name)
    with pytest.raises(VersionMismatchError, match="data classes"):
        relabelled.invoke({"n": 0}, {"configurable": {"thread_id": "r1"}})


class Asked(TypedDict):
    name: Annotated[str, Classified("pii")]
    verdict: str


def test_classed_interrupts_and_effect_results_are_redacted_with_their_class(
    store: Store,
) -> None:
    def lookup(s: Asked, ctx: wayline.NodeContext) -> dict[str, Any]:
        found = ctx.effect("crm", lambda key: {"phone": f"{PII}-phone"}, classified="pii")
        noted = ctx.effect("ticket", lambda key: {"id": f"{KEEP}-ticket"})
        answer = wayline.interrupt({"call": found["phone"]}, classified="pii")
        return {"verdict": f"{noted['id']} {answer['ok']}"}

    g = StateGraph(Asked)
    g.add_node("lookup", lookup)
    g.add_edge(START, "lookup")
    g.add_edge("lookup", END)
    app = g.compile(store)
    cfg = {"configurable": {"thread_id": "q1", "subject": "alice"}}
    app.invoke({"name": f"{PII}-name"}, cfg)
    client = wayline.Wayline(store)
    assert {"effects", "interrupts"} <= set(holding(store, PII))  # waiting on the question
    counts = client.redact("q1", ["pii"])
    assert counts["effects"] == 1 and counts["interrupts"] == 1
    assert holding(store, PII) == []
    assert "effects" in holding(store, f"{KEEP}-ticket")  # the unlabelled effect is kept
    (question,) = client.pending("q1")
    assert question.value == Redacted("pii", question.value.at) and question.cls == "pii"
    exported = json.dumps(client.export("q1"))
    assert PII not in exported and '"cls": "pii"' in exported
    with pytest.raises(RedactedRunError):
        app.invoke(wayline.Command(resume={"ok": "yes"}), cfg)


def test_a_run_being_executed_is_not_redacted_under_its_worker(store: Store) -> None:
    app = build(store)
    run(app, "r1", "alice")
    store.claim("default", "r1", owner="worker-7", lease_seconds=60)  # a live lease
    with pytest.raises(LeaseConflictError, match="worker-7"):
        wayline.Wayline(store).redact("r1", ["pii"])
    with pytest.raises(LeaseConflictError, match="cancel it"):
        wayline.Wayline(store).erase_subject("alice", classes=["pii"])
    assert state(app, "r1")["msgs"][0].startswith(PII)  # nothing was changed


class Inner(TypedDict):
    notes: Annotated[list[str], operator.add, Classified("pii")]
    topic: str


class Outer(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add, Classified("pii")]


def test_subgraph_runs_name_the_subject_and_are_erased_with_it(store: Store) -> None:
    inner = StateGraph(Inner)
    inner.add_node("research", lambda s: {"notes": [f"{PII}-{s['topic']}"]})
    inner.add_edge(START, "research")
    inner.add_edge("research", END)
    outer = StateGraph(Outer)
    outer.add_node("child", inner.compile())
    outer.add_edge(START, "child")
    outer.add_edge("child", END)
    app = outer.compile(store)
    cfg = {"configurable": {"thread_id": "p1", "subject": "alice"}}
    assert app.invoke({"topic": "t", "notes": []}, cfg)["notes"] == [f"{PII}-t"]
    runs = store.runs_of_subject("default", "alice")
    assert len(runs) == 2 and "p1" in runs  # the parent and its child run
    child = store.get_run("default", next(r for r in runs if r != "p1"))
    assert child is not None and dict(child.classes) == {"notes": "pii"}
    wayline.Wayline(store).erase_subject("alice", classes=["pii"])
    assert holding(store, PII) == []
    assert isinstance(state(app, "p1")["notes"], Redacted) and state(app, "p1")["topic"] == "t"


def test_a_damaged_row_does_not_keep_a_subject_from_being_erased_whole(store: Store) -> None:
    """Purging deletes without reading: a run of the subject with a row that cannot be
    read is erased with the others (it used to stop the erasure of every run, that one's
    rows read for the receipt's counts first)."""
    app = build(store)
    for i in range(2):
        run(app, f"carol-{i}", "carol")
    run(app, "bob-1", "bob")
    flip_row(store, "deltas", pick(store, "deltas", "carol-0"))
    receipt = wayline.Wayline(store).erase_subject("carol")
    assert receipt["mode"] == "purge" and receipt["runs"] == ["carol-0", "carol-1"]
    assert receipt["rows"]["deltas"] == 12 and receipt["rows"]["runs"] == 2
    assert store.runs_of_subject("default", "carol") == []
    assert not any(b"carol-" in row for t, row in stored_rows(store) if t != "audit")
    assert state(app, "bob-1")["msgs"][0] == f"{PII}-bob-0"  # another subject's run: kept


def test_erasing_classes_refuses_a_subject_with_a_damaged_row_before_changing_anything(
    store: Store,
) -> None:
    """Redaction reads every row it rewrites: a damaged one is found first, named, and no
    run of the subject is half-erased (as a busy run is refused first); once restored,
    the erasure goes through."""
    app = build(store)
    for i in range(2):
        run(app, f"dave-{i}", "dave")
    row = pick(store, "deltas", "dave-1")
    before = [d.payload for d in store.load_deltas("default", "dave-0", -1, 100)]
    flip_row(store, "deltas", row)
    client = wayline.Wayline(store)
    with pytest.raises(CorruptionError, match="Nothing of the subject was erased") as refused:
        client.erase_subject("dave", classes=["pii"])
    assert (refused.value.table, refused.value.run_id) == ("deltas", "dave-1")
    assert [d.payload for d in store.load_deltas("default", "dave-0", -1, 100)] == before
    assert client.audit(subject_digest("dave")) == []  # no receipt: nothing was erased
    restore_row(store, "deltas", row)
    receipt = client.erase_subject("dave", classes=["pii"])
    assert receipt["runs"] == ["dave-0", "dave-1"] and holding(store, "dave@") == []


def test_a_retention_pass_goes_past_a_run_it_cannot_read(store: Store) -> None:
    """Every pass reads the runs in the same order: one that stopped at a damaged run kept
    every run after it past its time. It is reported as failed, and the others are done."""
    app = build(store)
    for i in range(3):
        run(app, f"erin-{i}", "erin")
    (row,) = rows_of(store, "runs", "erin-1")
    sql(
        store,
        "UPDATE runs SET next_nodes = ? WHERE tenant_id = 'default' AND run_id = ?",
        ("[", "erin-1"),
    )
    actions = wayline.Wayline(store).apply_policy(DataPolicy.parse("pii=0d:redact"))
    by_run = {a["run_id"]: a for a in actions}
    assert (
        by_run["erin-1"]["action"] == "failed"
        and "runs row of run 'erin-1'" in by_run["erin-1"]["error"]
    )
    assert by_run["erin-0"]["action"] == by_run["erin-2"]["action"] == "redact"
    for i in (0, 2):
        assert isinstance(state(app, f"erin-{i}")["msgs"], Redacted)
    sql(
        store,
        "UPDATE runs SET next_nodes = ? WHERE tenant_id = 'default' AND run_id = ?",
        (row["next_nodes"], "erin-1"),
    )
    (again,) = wayline.Wayline(store).apply_policy(DataPolicy.parse("pii=0d:redact"))
    assert (again["run_id"], again["action"]) == ("erin-1", "redact")


def test_a_run_with_queued_input_is_not_redacted_past_it(store: Store) -> None:
    """Input queued behind a busy run (``multitask_strategy="enqueue"``) has not been
    applied yet: erasing the run's class would miss it, so erasure waits for it."""
    app = build(store)
    run(app, "r1", "alice")
    store.queue_input("default", "r1", b"queued", label="api-2")
    with pytest.raises(LeaseConflictError, match="queued"):
        wayline.Wayline(store).redact("r1", ["pii"])
    assert state(app, "r1")["msgs"][0].startswith(PII)  # nothing was changed
    assert store.drop_queued("default", "r1", "api-2")
    wayline.Wayline(store).redact("r1", ["pii"])
    assert PII not in str(state(app, "r1")["msgs"])
