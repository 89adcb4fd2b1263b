"""wayline itself never imports LangGraph: only ``wayline.langgraph`` does (the optional
``[langgraph]`` extra). Checked in a fresh interpreter that imports every other module
(langchain-core, the ``[langchain]`` extra, is another matter: docs/architecture.md)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import importlib, pathlib, sys
import wayline
root = pathlib.Path(wayline.__path__[0])
for path in sorted(root.rglob("*.py")):
    name = ".".join(("wayline", *path.relative_to(root).with_suffix("").parts))
    name = name.removesuffix(".__init__")
    if not name.startswith("wayline.langgraph"):
        importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "langgraph")
print(loaded)
"""


def test_no_module_outside_wayline_langgraph_imports_langgraph() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
