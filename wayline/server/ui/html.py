"""Small HTML builders for the dashboard: every value is escaped here, once."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "bytes_chart",
    "channel_label",
    "diff_rows",
    "esc",
    "form",
    "page",
    "pre_json",
    "table",
]

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
nav{background:#1d2330;padding:10px 18px}nav a{color:#dfe6f3;margin-right:16px;
text-decoration:none}nav .who{float:right;color:#9fb0c8}main{padding:16px 22px}
table{border-collapse:collapse;background:#fff;margin:8px 0 18px}td,th{border:1px solid
#dde2ea;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eef1f5}
pre{background:#fff;border:1px solid #dde2ea;padding:8px;max-height:320px;overflow:auto}
.status{padding:1px 6px;border-radius:3px;background:#e4e8ef}.done{background:#d6f5dd}
.failed,.parked{background:#fbd9d9}.interrupted{background:#fdf0c8}.running{background:#d7e8fb}
.added{background:#e3f7e6}.removed{background:#fbe3e3}.changed{background:#fff5d6}
form.inline{display:inline}button{cursor:pointer}.muted{color:#7a8599}
.err{background:#fbd9d9;padding:8px;border:1px solid #e8a5a5}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, *, who: str | None = None) -> str:
    nav = ""
    if who is not None:
        links = [
            ("/ui/runs", "Runs"),
            ("/ui/approvals", "Approvals"),
            ("/ui/reconcile", "Reconciliation"),
            ("/ui/workers", "Workers"),
            ("/ui/audit", "Audit"),
            ("/ui/memory", "Memory"),
            ("/ui/health", "Health"),
        ]
        nav = (
            "<nav>"
            + "".join(f'<a href="{u}">{t}</a>' for u, t in links)
            + f'<span class="who">{esc(who)}</span></nav>'
        )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)} · wayline"
        f"</title><style>{STYLE}</style></head><body>{nav}<main><h1>{esc(title)}</h1>"
        f"{body}</main></body></html>"
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "") -> str:
    """``rows`` are already HTML (escape values with ``esc``)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


def pre_json(value: Any) -> str:
    return f"<pre>{esc(json.dumps(value, indent=2, default=str))}</pre>"


def form(action: str, csrf: str, fields: Mapping[str, str], button: str, **extra: str) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
        for k, v in {**fields, "csrf": csrf}.items()
    )
    more = "".join(extra.values())
    return (
        f'<form class="inline" method="post" action="{esc(action)}">{hidden}{more}'
        f"<button>{esc(button)}</button></form>"
    )


def diff_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
    """Key by key: added, removed, changed (a list that grew shows only what it gained)."""
    rows = []
    for key in sorted(set(a) | set(b)):
        if key not in a:
            rows.append([esc(key), '<span class="added">added</span>', pre_json(b[key])])
        elif key not in b:
            rows.append([esc(key), '<span class="removed">removed</span>', pre_json(a[key])])
        elif a[key] != b[key]:
            old, new = a[key], b[key]
            if isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old:
                rows.append(
                    [
                        esc(key),
                        f'<span class="changed">+{len(new) - len(old)} items</span>',
                        pre_json(new[len(old) :]),
                    ]
                )
            else:
                rows.append(
                    [
                        esc(key),
                        '<span class="changed">changed</span>',
                        pre_json(old) + "→" + pre_json(new),
                    ]
                )
    return rows


PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")


def channel_label(channel: str) -> str:
    """A channel as a reader names it: the meter's unattributed bytes (the envelope of a
    row: framing, ids, checksums) and the internal channels of joins read as what they
    are, not as ``(framing)`` or ``__join__:a+b:c``."""
    if not channel:
        return "row framing"
    if channel.startswith("__join__:"):
        sources, _, target = channel.removeprefix("__join__:").rpartition(":")
        return f"join {sources.replace('+', ', ')} → {target}"
    if channel.startswith("__") and channel.endswith("__") and len(channel) > 4:
        return channel.strip("_")
    return channel


def bytes_chart(per_step: Mapping[int, Mapping[str, int]], *, width: int = 760) -> str:
    """Bytes written per step, stacked by channel, as inline SVG (no script, no build).
    The legend wraps onto as many rows as its names need, inside the chart's width."""
    if not per_step:
        return '<p class="muted">nothing metered yet</p>'
    steps = sorted(per_step)
    channels = sorted({c for row in per_step.values() for c in row})
    colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(channels)}
    top = max(sum(row.values()) for row in per_step.values()) or 1
    height, pad = 180, 30
    legend, legend_x, legend_y = [], pad, height + 18
    for ch in channels:
        label = channel_label(ch)
        room = 20 + 7 * len(label)
        if legend_x + room > width and legend_x > pad:  # next row
            legend_x, legend_y = pad, legend_y + 16
        legend.append(
            f'<rect x="{legend_x}" y="{legend_y}" width="10" height="10" '
            f'fill="{colour[ch]}"/><text x="{legend_x + 14}" y="{legend_y + 9}" '
            f'font-size="11">{esc(label)}</text>'
        )
        legend_x += room
    bar = max(1.0, (width - pad) / len(steps))
    parts = [
        f'<svg id="bytes-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{legend_y + 22}" role="img" aria-label="bytes per channel per step">',
        f'<text x="0" y="12" font-size="11">{top:,} B</text>',
    ]
    for i, step in enumerate(steps):
        y = float(height)
        for ch in channels:
            n = per_step[step].get(ch, 0)
            if not n:
                continue
            h = n / top * (height - 20)
            y -= h
            x = pad + i * bar
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bar - 1, 0.5):.1f}" '
                f'height="{h:.1f}" fill="{colour[ch]}"><title>step {step} · '
                f"{esc(channel_label(ch))}: {n:,} B</title></rect>"
            )
    parts += legend
    parts.append("</svg>")
    return "".join(parts)
