"""The dashboard's health page: the fleet's metrics over a window, per graph.

Two sources, each named on the page: what every worker recorded and flushed to the store a
minute at a time (``metric_samples``: reconstruction latency by ``recovery``, replay depth,
commit and node latency, bytes per step, scheduled verifications), and what the stored rows
say of the runs that finished in the window (steps per run, bytes per step by table and
class, the first-to-last ratio: the meter, as ``wayline runs bytes`` reads it), with the
``wayline store report`` table below. Percentiles of a flushed histogram are read from its
buckets (linear inside the bucket), so they are as fine as its bounds.
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Sequence

from wayline.instrument import ByteReport
from wayline.instrument_classes import store_report
from wayline.metrics import METRICS
from wayline.server.ui.html import esc, table
from wayline.store.base import Store
from wayline.store.metric_samples import metric_samples

__all__ = ["WINDOWS", "health_html", "percentile"]

WINDOWS = (15, 60, 360, 1440)
"""Minutes the page offers."""
FINISHED_RUNS = 200
"""At most this many finished runs are read for the figures from stored rows."""


def percentile(bounds: Sequence[float], buckets: Sequence[int], q: float) -> float:
    """The ``q`` quantile (0..1) of a histogram, linear inside its bucket; above the last
    bound, the last bound."""
    count = sum(buckets)
    if not count:
        return float("nan")
    rank, seen = q * count, 0
    for i, n in enumerate(buckets):
        if n and seen + n >= rank:
            if i >= len(bounds):
                return float(bounds[-1])
            low = bounds[i - 1] if i else 0.0
            return low + (bounds[i] - low) * (rank - seen) / n
        seen += n
    return float(bounds[-1])


def _fmt(value: float) -> str:
    if value != value:
        return "-"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def histogram_svg(
    label: str, bounds: Sequence[float], buckets: Sequence[int], *, width: int = 340
) -> str:
    """One histogram as inline SVG: a bar per bucket, its range and count as its title."""
    top = max(buckets) or 1
    height, bar = 90, width / len(buckets)
    parts = [
        f'<svg class="histogram" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height + 28}" role="img" aria-label="{esc(label)}">',
        f'<text x="0" y="10" font-size="10">{esc(label)}</text>',
    ]
    for i, n in enumerate(buckets):
        low = bounds[i - 1] if i else 0
        high = f"{bounds[i]:g}" if i < len(bounds) else "∞"
        h = n / top * (height - 16)
        parts.append(
            f'<rect x="{i * bar:.1f}" y="{height - h:.1f}" width="{max(bar - 1, 0.5):.1f}" '
            f'height="{h:.1f}" fill="#4e79a7"><title>{low:g}-{high}: {n:,}</title></rect>'
        )
    parts.append(f'<text x="0" y="{height + 12}" font-size="9">0</text>')
    parts.append(f'<text x="{width - 40}" y="{height + 12}" font-size="9">{bounds[-1]:g}+</text>')
    parts.append("</svg>")
    return "".join(parts)


def _attrs_label(attrs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in attrs) or "all"


def _flushed(store: Store, tenant: str, since_minute: int) -> str:
    rows = metric_samples(store).load(tenant, since_minute)
    merged: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = {}
    hist: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
    for r in rows:
        metric = METRICS.get(r.metric)
        if metric is None:
            continue
        key = (r.metric, r.attrs)
        agg = merged.setdefault(key, [0, 0.0])
        agg[0] += r.count
        agg[1] += r.total
        if metric.kind == "histogram" and len(r.buckets) == len(metric.bounds) + 1:
            into = hist.setdefault(key, [0] * len(r.buckets))
            for i, n in enumerate(r.buckets):
                into[i] += n
    if not merged:
        return (
            '<p class="muted">no metrics flushed in this window (workers flush every '
            "10 s; none ran, or they serve another store)</p>"
        )
    parts = []
    for name, metric in METRICS.items():
        keys = sorted(k for k in merged if k[0] == name)
        if not keys:
            continue
        parts.append(f"<h3>{esc(name)} ({esc(metric.unit)})</h3>")
        parts.append(f'<p class="muted">{esc(metric.description)}</p>')
        if metric.kind == "counter":
            rows_html = [[esc(_attrs_label(k[1])), esc(int(merged[k][1]))] for k in keys]
            parts.append(table(["series", "count"], rows_html, cls="metric-counts"))
            continue
        body, charts = [], []
        for key in keys:
            count, total = merged[key]
            buckets = hist.get(key, [])
            p = [percentile(metric.bounds, buckets, q) for q in (0.5, 0.9, 0.99)]
            body.append(
                [esc(_attrs_label(key[1])), esc(f"{int(count):,}"), esc(_fmt(total / count))]
                + [esc(_fmt(v)) for v in p]
            )
            if buckets:
                charts.append(histogram_svg(_attrs_label(key[1]), metric.bounds, buckets))
        cls = "metric " + name.replace(".", "-")
        parts.append(table(["series", "count", "mean", "p50", "p90", "p99"], body, cls=cls))
        parts.append("".join(charts))
    return "".join(parts)


def _from_rows(store: Store, tenant: str, since: float) -> str:
    runs = [
        r
        for r in store.list_runs(tenant, status="done", limit=FINISHED_RUNS)
        if r.updated_at >= since
    ]
    if not runs:
        return '<p class="muted">no run finished in this window</p>'
    steps: dict[str, list[int]] = defaultdict(list)
    ratios: dict[str, list[float]] = defaultdict(list)
    per_step: dict[tuple[str, str, str], int] = defaultdict(int)
    graph_steps: dict[str, int] = defaultdict(int)
    for run in runs:
        report = ByteReport(run.run_id, store.load_meter(tenant, run.run_id), dict(run.classes))
        graph, n = run.graph_name, run.step + 1
        steps[graph].append(n)
        ratio = report.first_to_last
        if ratio == ratio:
            ratios[graph].append(ratio)
        graph_steps[graph] += n
        for m in report.rows:
            cls = "framing" if not m.channel else report.classes.get(m.channel, "default")
            per_step[(graph, m.table, cls)] += m.bytes
    bounds = METRICS["wayline.run.steps"].bounds
    rows, charts = [], []
    for graph in sorted(steps):
        values = sorted(steps[graph])
        buckets = [0] * (len(bounds) + 1)
        for v in values:
            buckets[bisect.bisect_left(bounds, v)] += 1
        rs = sorted(ratios[graph])
        rows.append(
            [
                esc(graph),
                esc(len(values)),
                esc(values[len(values) // 2]),
                esc(values[min(len(values) - 1, int(len(values) * 0.9))]),
                esc(values[-1]),
                esc(_fmt(rs[len(rs) // 2]) if rs else "-"),
                esc(_fmt(rs[-1]) if rs else "-"),
            ]
        )
        charts.append(histogram_svg(f"steps per run, graph={graph}", bounds, buckets))
    out = [
        f'<p class="muted">{len(runs)} run(s) finished in the window (at most '
        f"{FINISHED_RUNS} read), from the stored rows</p>",
        table(
            ["graph", "runs", "steps p50", "steps p90", "steps max", "first→last p50", "max"],
            rows,
            cls="finished-runs",
        ),
        "".join(charts),
        "<h3>Bytes per step, by table and data class</h3>",
        table(
            ["graph", "table", "class", "bytes", "bytes per step"],
            [
                [esc(g), esc(t), esc(c), esc(f"{b:,}"), esc(_fmt(b / graph_steps[g]))]
                for (g, t, c), b in sorted(per_step.items())
            ],
            cls="bytes-per-step",
        ),
    ]
    return "".join(out)


def _verification(store: Store, tenant: str) -> str:
    found = metric_samples(store).verify_findings(tenant, 0.0)
    if not found:
        return '<p class="muted">no divergence found by verification</p>'
    rows = [
        [
            f'<a href="/ui/runs/{esc(f["run_id"])}">{esc(f["run_id"])}</a>',
            esc(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(f["at"])))),
            esc(f["actor"]),
            f'<span class="status failed">{esc(f["outcome"])}</span>',
            esc(f["detail"] or ""),
        ]
        for f in found
    ]
    return table(["run", "at (UTC)", "by", "outcome", "detail"], rows, cls="verify-findings")


def _report(store: Store, tenant: str) -> str:
    rows = store_report(store, tenants=[tenant])
    return table(
        ["tenant", "class", "runs", "rows", "bytes", "oldest", "next"],
        [
            [
                esc(r.tenant),
                esc(r.cls),
                esc(r.runs),
                esc(r.rows),
                esc(f"{r.bytes:,}"),
                esc(time.strftime("%Y-%m-%d %H:%M", time.gmtime(r.oldest))),
                esc(r.next),
            ]
            for r in rows
        ],
        cls="store-report",
    )


def health_html(store: Store, tenant: str, window: int) -> str:
    now = time.time()
    options = "".join(
        f'<option value="{w}"{" selected" if w == window else ""}>last {w} min</option>'
        for w in WINDOWS
    )
    picker = (
        f'<form method="get" action="/ui/health"><select name="window">{options}</select> '
        "<button>Show</button></form>"
    )
    return "".join(
        [
            picker,
            "<h2>What the workers recorded</h2>",
            _flushed(store, tenant, int(now // 60) - window),
            "<h2>Scheduled verification: what it found</h2>",
            _verification(store, tenant),
            "<h2>Finished runs, from the stored rows</h2>",
            _from_rows(store, tenant, now - window * 60),
            "<h2>Store report (wayline store report)</h2>",
            _report(store, tenant),
        ]
    )
