"""The dashboard's memory page: a tenant's namespaces, and the items of one namespace
with where each came from (run, step and node, or source) and whether it still holds."""

from __future__ import annotations

from urllib.parse import quote

from wayline.server.ui.html import esc, table
from wayline.store.base import Store

__all__ = ["memory_html"]


def memory_html(store: Store, tenant: str, namespace: str | None) -> str:
    spaces = sorted(set(store.memory_namespaces(tenant)))
    listing = table(
        ["namespace", ""],
        [
            [esc(".".join(ns)), f'<a href="/ui/memory?ns={quote(".".join(ns))}">items</a>']
            for ns in spaces[:500]
        ],
    )
    if not namespace:
        return f"<p>{len(spaces)} namespace(s) hold items.</p>" + listing
    ns = tuple(namespace.split("."))
    rows = store.memory_scan(tenant, ns, include_invalidated=True)
    items = table(
        ["namespace", "key", "value", "source", "observed", "subject", "class", "invalid"],
        [
            [
                esc(".".join(r.namespace)),
                esc(r.key),
                esc(str(r.value)[:200]),
                esc(f"{r.run_id} step {r.step} {r.node}" if r.run_id else (r.source or "caller")),
                esc(r.observed_at),
                esc(r.subject or ""),
                esc(r.cls or ""),
                esc(r.invalid_reason or ""),
            ]
            for r in rows[:500]
        ],
    )
    return f"<h2>{esc(namespace)}</h2>" + items + "<h2>namespaces</h2>" + listing
