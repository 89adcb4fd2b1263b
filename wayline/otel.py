"""OpenTelemetry for wayline (``pip install 'wayline[otel]'``); a no-op without it.

``instrument(store, graphs)`` returns the graphs and sets up the store so that:

- spans: ``wayline.run`` (one per execution of a run by a worker), ``wayline.step`` (one
  per superstep, the nodes' spans inside it), ``wayline.node``, ``wayline.commit`` (one
  per store transaction of a run) and ``wayline.effect`` (each durable effect record: the
  intent, then the outcome), with ``wayline.run_id``, ``wayline.tenant``,
  ``wayline.step``, ``wayline.node`` and ``wayline.effect_key``;
- metrics: every histogram and counter of ``wayline.metrics`` (commit latency of every
  commit, grouped ones included; reconstruction latency and replay depth tagged
  ``recovery``; node latency; bytes per step by table and class; steps and first-to-last
  ratio of finished runs; scheduled verifications), forwarded as they are recorded from the
  moment ``instrument`` is called, with ``wayline.tenant`` among the attributes; and
  ``wayline.steps`` (supersteps run), ``wayline.bytes_written`` (per table and channel,
  from the same meter rows the store keeps), ``wayline.effects`` (records written, by
  status), ``wayline.claims`` (runs claimed, by kind: ``input`` when handed new input,
  ``continue`` when a worker picks a run up where another stopped: a lease takeover, a
  retry or a resume), and, for an SQL store, ``wayline.approvals.waiting`` (open approvals
  per tenant, read when metrics are collected).

The graph's loop is not touched: a traced graph is the same graph whose ``run_loop`` (the
one entry a worker drives) opens the run and step spans and whose node functions open node
spans; the store's commit, effect and claim methods are wrapped on the one instance given.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from wayline.graph.compiled import CompiledGraph
from wayline.store.base import Store
from wayline.store.records import CommitBatch, EffectRecord

__all__ = ["available", "instrument"]

try:  # the extra is optional: everything below is a no-op without it
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
except ImportError:  # pragma: no cover - exercised only without the extra
    trace = None  # type: ignore[assignment]


def available() -> bool:
    return trace is not None


@dataclasses.dataclass
class _Instruments:
    tracer: Any
    steps: Any
    bytes_written: Any
    effects: Any
    claims: Any


def _instruments(tracer_provider: Any, meter_provider: Any) -> _Instruments:
    tracer = trace.get_tracer("wayline", tracer_provider=tracer_provider)
    meter = metrics.get_meter("wayline", meter_provider=meter_provider)
    return _Instruments(
        tracer=tracer,
        steps=meter.create_counter("wayline.steps", description="supersteps run"),
        bytes_written=meter.create_counter(
            "wayline.bytes_written", unit="By", description="payload bytes written"
        ),
        effects=meter.create_counter("wayline.effects", description="effect records written"),
        claims=meter.create_counter("wayline.claims", description="runs claimed by workers"),
    )


def instrument(
    store: Store,
    graphs: Mapping[str, CompiledGraph],
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
) -> dict[str, CompiledGraph]:
    """Traced copies of ``graphs`` (and ``store`` wrapped in place); the inputs unchanged
    when OpenTelemetry is not installed. Providers default to the global ones."""
    if not available():
        return dict(graphs)
    inst = _instruments(tracer_provider, meter_provider)
    _forward_registry(meter_provider)
    _wrap_store(store, inst)
    _approvals_gauge(store, meter_provider)
    return {name: _traced_graph(g, inst) for name, g in graphs.items()}


# -- the store ------------------------------------------------------------------------------


def _wrap_store(store: Store, inst: _Instruments) -> None:
    if getattr(store, "_wayline_traced", False):
        return
    commit, commit_many = store.commit, store.commit_many
    put_effect, claim_next = store.put_effect, store.claim_next

    @functools.wraps(commit)
    def traced_commit(tenant_id: str, run_id: str, token: int, batch: CommitBatch) -> None:
        steps = [d.step for d in batch.deltas]
        attrs: dict[str, str | int] = {"wayline.run_id": run_id, "wayline.tenant": tenant_id}
        if steps:
            attrs["wayline.step"] = steps[-1]
        effects = _effect_spans(inst, run_id, [w.record for w in batch.effects])
        with inst.tracer.start_as_current_span("wayline.commit", attributes=attrs):
            try:
                commit(tenant_id, run_id, token, batch)  # its duration: wayline.metrics
            finally:
                _end(effects)
        _committed(inst, batch)

    @functools.wraps(commit_many)
    def traced_commit_many(
        items: Sequence[tuple[str, str, int, CommitBatch]],
    ) -> list[BaseException | None]:
        spans = [
            _effect_spans(inst, run_id, [w.record for w in batch.effects])
            for _, run_id, _, batch in items
        ]
        try:
            errors = commit_many(items)
        finally:
            for effects in spans:
                _end(effects)
        for (_, _, _, batch), error in zip(items, errors, strict=True):
            if error is None:
                _committed(inst, batch)
        return errors

    @functools.wraps(put_effect)
    def traced_put_effect(
        run_id: str, token: int | None, record: EffectRecord, *, expect: Any
    ) -> bool:
        (span,) = _effect_spans(inst, run_id, [record])
        try:
            written = put_effect(run_id, token, record, expect=expect)
        finally:
            span.end()
        if written and record.kind == "effect":
            inst.effects.add(1, {"status": record.status})
        return written

    @functools.wraps(claim_next)
    def traced_claim_next(**kwargs: Any) -> Any:
        claimed = claim_next(**kwargs)
        if claimed is not None:
            run = claimed[0]
            kind = "input" if run.inbox is not None else "continue"
            inst.claims.add(1, {"kind": kind, "graph": run.graph_name})
        return claimed

    # Bound methods replaced on this one instance (a Store is a Protocol: no subclass).
    store.commit = traced_commit  # type: ignore[method-assign]
    store.commit_many = traced_commit_many  # type: ignore[method-assign]
    store.put_effect = traced_put_effect  # type: ignore[method-assign]
    store.claim_next = traced_claim_next  # type: ignore[method-assign]
    store._wayline_traced = True  # type: ignore[attr-defined]


def _effect_spans(inst: _Instruments, run_id: str, records: list[EffectRecord]) -> list[Any]:
    """A ``wayline.effect`` span for each effect record written (an intent or an outcome),
    started now; ended when its commit returns."""
    spans = []
    for r in records:
        attrs = {
            "wayline.run_id": run_id,
            "wayline.tenant": r.tenant_id,
            "wayline.step": r.step,
            "wayline.node": r.node,
            "wayline.effect_key": r.key,
            "wayline.effect_status": r.status,
        }
        spans.append(inst.tracer.start_span("wayline.effect", attributes=attrs))
    return spans


def _end(spans: list[Any]) -> None:
    for span in spans:
        span.end()


def _committed(inst: _Instruments, batch: CommitBatch) -> None:
    """Metrics of a batch that committed: bytes per table and channel, effects by status."""
    rows = [m for part in (batch.deltas, batch.snapshots) for r in part for m in r.meter()]
    for row in rows + batch.meter():
        inst.bytes_written.add(row.bytes, {"table": row.table, "channel": row.channel})
    for w in batch.effects:
        if w.record.kind == "effect":
            inst.effects.add(1, {"status": w.record.status})


def _forward_registry(meter_provider: Any) -> None:
    """Each value ``wayline.metrics`` records from now on, to an OpenTelemetry instrument of
    the same name, unit and description."""
    from wayline.metrics import METRICS, REGISTRY

    meter = metrics.get_meter("wayline", meter_provider=meter_provider)
    instruments: dict[str, Any] = {
        m.name: (
            meter.create_counter(m.name, unit=m.unit, description=m.description)
            if m.kind == "counter"
            else meter.create_histogram(m.name, unit=m.unit, description=m.description)
        )
        for m in METRICS.values()
    }

    def forward(name: str, value: float, tenant: str, attrs: tuple[tuple[str, str], ...]) -> None:
        instrument = instruments[name]
        labels = {"wayline.tenant": tenant, **dict(attrs)}
        if METRICS[name].kind == "counter":
            instrument.add(value, labels)
        else:
            instrument.record(value, labels)

    REGISTRY.listeners.append(forward)


def _approvals_gauge(store: Store, meter_provider: Any) -> None:
    from wayline.errors import StoreError
    from wayline.store.server_tables import server_tables

    try:
        tables = server_tables(store)
    except StoreError:
        return  # not an SQL store: no gauge

    def observe(options: Any) -> list[Any]:
        waiting = tables.approvals_waiting()
        return [metrics.Observation(n, {"wayline.tenant": t}) for t, n in waiting.items()]

    meter = metrics.get_meter("wayline", meter_provider=meter_provider)
    meter.create_observable_gauge(
        "wayline.approvals.waiting", callbacks=[observe], description="open approvals"
    )


# -- the graph ------------------------------------------------------------------------------


class TracedGraph(CompiledGraph):
    """A compiled graph whose runs, steps and nodes open spans."""

    _inst: _Instruments

    def run_loop(
        self,
        loop: Any,
        input: Any,
        *,
        breakpoints: tuple[frozenset[str], frozenset[str]] | None = None,
    ) -> Iterator[tuple[str, Any]]:
        inst = self._inst
        loop.step_events = True  # each step's values event closes its span
        base = {"wayline.run_id": loop.run_id, "wayline.tenant": loop.tenant_id}
        attrs = {**base, "wayline.graph": self.name}
        with inst.tracer.start_as_current_span("wayline.run", attributes=attrs) as run_span:
            events = super().run_loop(loop, input, breakpoints=breakpoints)
            while True:
                span = inst.tracer.start_span("wayline.step", attributes=base)
                token = otel_context.attach(trace.set_span_in_context(span))
                try:
                    for mode, chunk in events:
                        yield mode, chunk
                        if mode == "values":  # the step committed
                            break
                    else:
                        span.update_name("wayline.finish")  # the last flush and release
                        return
                    span.set_attribute("wayline.step", loop.step)
                    inst.steps.add(1, {"graph": self.name})
                except BaseException as exc:
                    span.record_exception(exc)
                    run_span.set_attribute("wayline.error", type(exc).__name__)
                    raise
                finally:
                    otel_context.detach(token)
                    span.end()


def _traced_graph(graph: CompiledGraph, inst: _Instruments) -> CompiledGraph:
    traced = copy.copy(graph)
    traced.__class__ = TracedGraph  # same state, one method more: no loop code is copied
    traced._inst = inst  # type: ignore[attr-defined]
    traced.nodes = {
        name: dataclasses.replace(spec, fn=_traced_node(spec.fn, name, spec.is_async, inst))
        for name, spec in graph.nodes.items()
    }
    return traced


def _traced_node(fn: Any, name: str, is_async: bool, inst: _Instruments) -> Any:
    if is_async:

        async def traced_async(*args: Any) -> Any:
            with inst.tracer.start_as_current_span(
                "wayline.node", attributes={"wayline.node": name}
            ):
                return await fn(*args)

        return traced_async

    def traced(*args: Any) -> Any:
        with inst.tracer.start_as_current_span("wayline.node", attributes={"wayline.node": name}):
            return fn(*args)

    return traced
