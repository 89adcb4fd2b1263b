"""OpenTelemetry: spans per run, step, node, effect and commit, and metrics, caught with
the SDK's in-memory exporter and reader; nothing at all without the package."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import wayline
from wayline import otel
from wayline.worker import Worker, WorkerConfig

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="pip install 'wayline[otel]'")
from graphs import pay, refund, simple  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    data = reader.get_metrics_data()
    assert data is not None, "no metrics were recorded"
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out[m.name].extend(m.data.data_points)
    return out


def test_spans_and_metrics_of_a_worker_run(tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'otel.db'}")
    exporter = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    graphs = otel.instrument(
        store,
        {n: g().compile(store) for n, g in (("simple", simple), ("pay", pay), ("refund", refund))},
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    client = wayline.Wayline(store, tenant="acme")
    client.start(graphs["simple"], {"n": 0}, run_id="r1")
    client.start(graphs["pay"], {"amount": 5}, run_id="r2")
    Worker(store, list(graphs.values()), WorkerConfig(poll_interval=0.05)).run(max_runs=2)
    assert client.get("r1").status == "done" and client.get("r2").status == "done"

    spans = exporter.get_finished_spans()
    by_name: dict[str, list[Any]] = defaultdict(list)
    for s in spans:
        by_name[s.name].append(s)
    runs = {s.attributes["wayline.run_id"]: s for s in by_name["wayline.run"]}
    assert set(runs) == {"r1", "r2"} and runs["r1"].attributes["wayline.tenant"] == "acme"
    r1_steps = [
        s for s in by_name["wayline.step"] if s.parent.span_id == runs["r1"].context.span_id
    ]
    assert sorted(s.attributes["wayline.step"] for s in r1_steps) == [0, 1, 2]
    nodes = {s.attributes["wayline.node"]: s for s in by_name["wayline.node"]}
    assert {"a", "b", "charge"} <= set(nodes)
    step_ids = {s.context.span_id for s in by_name["wayline.step"]}
    assert all(n.parent.span_id in step_ids for n in by_name["wayline.node"])  # inside a step
    effects = [s for s in by_name["wayline.effect"] if s.attributes["wayline.node"] == "charge"]
    assert [s.attributes["wayline.effect_status"] for s in effects] == ["EXECUTING", "SUCCEEDED"]
    assert (
        effects[0].attributes["wayline.effect_key"] == effects[1].attributes["wayline.effect_key"]
    )
    commits = [s for s in by_name["wayline.commit"] if s.attributes["wayline.run_id"] == "r1"]
    assert commits and all(s.attributes["wayline.tenant"] == "acme" for s in commits)

    points = _metrics(reader)
    assert sum(p.value for p in points["wayline.steps"]) == 3 + 2  # r1: 0..2, r2: 0..1
    by_status = {p.attributes["status"]: p.value for p in points["wayline.effects"]}
    assert by_status == {"EXECUTING": 1, "SUCCEEDED": 1}
    delta_bytes = sum(
        p.value for p in points["wayline.bytes_written"] if p.attributes["table"] == "deltas"
    )
    metered = sum(
        m.bytes for r in ("r1", "r2") for m in store.load_meter("acme", r) if m.table == "deltas"
    )
    assert delta_bytes == metered  # the metric counts exactly what the store's meter holds
    assert sum(p.count for p in points["wayline.commit.duration"]) == len(by_name["wayline.commit"])
    assert {p.attributes["kind"] for p in points["wayline.claims"]} == {"input"}
    assert "wayline.approvals.waiting" not in points  # nothing waits

    client.start(graphs["refund"], {"amount": 9}, run_id="r3")
    Worker(store, list(graphs.values()), WorkerConfig(poll_interval=0.05)).run(max_runs=1)
    assert client.get("r3").status == "interrupted"
    waiting = _metrics(reader)["wayline.approvals.waiting"]
    assert [(p.attributes["wayline.tenant"], p.value) for p in waiting] == [("acme", 1)]


def test_a_no_op_without_opentelemetry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    store = wayline.connect(f"sqlite:///{tmp_path / 'plain.db'}")
    graph = simple().compile(store)
    monkeypatch.setattr(otel, "trace", None)
    out = otel.instrument(store, {"simple": graph})
    assert out["simple"] is graph and "commit" not in vars(store)
