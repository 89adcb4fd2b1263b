"""Run one page's Python blocks in order in this (fresh) process, in one namespace, as a
reader pasting them one after another would. Exits 1 naming the first block that fails.

``python run_page.py ROOT PATH`` (from the docs test); the server blocks use the URL and
key in ``WAYLINE_DOCS_URL`` / ``WAYLINE_DOCS_KEY``, the PostgreSQL blocks the URL (of a fresh
schema) in ``WAYLINE_DOCS_PG``.
"""

from __future__ import annotations

import os
import sys
import traceback
import types
from pathlib import Path

from blocks import blocks

PG_URL = "postgresql://wayline@localhost/wayline?schema=wayline"
"""The URL the PostgreSQL examples use, replaced by the suite's server and a fresh schema."""


def main(root: str, path: str) -> int:
    # the blocks' own __main__, so that a class's annotations resolve in its module
    page = types.ModuleType("__main__")
    sys.modules["__main__"] = page
    namespace = page.__dict__
    for block in blocks(Path(root), path):
        if block.marker == "skip":
            continue
        code = block.code
        if block.marker == "server":
            code = code.replace("http://127.0.0.1:8123", os.environ["WAYLINE_DOCS_URL"])
            code = code.replace('"wl_..."', repr(os.environ["WAYLINE_DOCS_KEY"]))
        if block.marker == "postgres":
            code = code.replace(PG_URL, os.environ["WAYLINE_DOCS_PG"])
        # the line numbers of a traceback are the page's own
        source = "\n" * (block.line - 1) + code
        try:
            exec(compile(source, block.name, "exec"), namespace)
        except BaseException:
            print(f"{block.name} failed:", file=sys.stderr)
            traceback.print_exc()
            return 1
        print(f"docs-test: ran {block.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
