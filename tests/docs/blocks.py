"""The fenced Python blocks of a Markdown page, and the markers that change how the docs
test treats one: an HTML comment on the line before the fence (invisible on the page).

- ``<!-- docs-test: skip: WHY -->``: not run; the test lists it with its reason.
- ``<!-- docs-test: server -->``: run against a ``wayline serve --demo`` the test starts
  (its URL and printed key replace ``http://127.0.0.1:8123`` and ``"wl_..."``).
- ``<!-- docs-test: postgres -->``: run against the suite's PostgreSQL
  (``postgresql://wayline@localhost/wayline?schema=wayline`` becomes a fresh schema's URL).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

__all__ = ["Block", "blocks"]

_FENCE = re.compile(r"^```(python|py)\s*$")
_MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|server|postgres)\s*(?::\s*(.*?))?\s*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    path: str  # relative to the repository
    index: int  # 1-based, among the page's Python blocks
    line: int  # of the first code line
    code: str
    marker: str | None  # "skip", "server" or "postgres"
    reason: str

    @property
    def name(self) -> str:
        return f"{self.path} block {self.index} (line {self.line})"


def blocks(root: Path, path: str) -> list[Block]:
    """Every fenced Python block of ``root / path``, in page order."""
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        if _FENCE.match(lines[i]):
            marker, reason = None, ""
            above = lines[i - 1] if i else ""
            m = _MARKER.match(above.strip())
            if m:
                marker, reason = m.group(1), (m.group(2) or "")
            start = i + 1
            j = start
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            code = "\n".join(lines[start:j]) + "\n"
            found.append(Block(path, len(found) + 1, start + 1, code, marker, reason))
            i = j
        i += 1
    return found
