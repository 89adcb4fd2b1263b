"""Only ``wayline.llamaindex`` imports LlamaIndex Workflows and only ``wayline.crewai``
imports CrewAI (the optional ``[llamaindex]`` and ``[crewai]`` extras). Checked in a fresh
interpreter that imports every other module of wayline."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = """
import importlib, json, pathlib, sys
import wayline
root = pathlib.Path(wayline.__path__[0])
skip = ("wayline.llamaindex", "wayline.crewai", "wayline.langgraph")
for path in sorted(root.rglob("*.py")):
    name = ".".join(("wayline", *path.relative_to(root).with_suffix("").parts))
    name = name.removesuffix(".__init__")
    if not name.startswith(skip):
        importlib.import_module(name)
tops = {m.split(".")[0] for m in sys.modules}
print(json.dumps(sorted(tops & {"workflows", "llama_index_instrumentation", "crewai"})))
"""


def test_no_module_outside_the_integrations_imports_llamaindex_or_crewai() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize(
    ("package", "framework"), [("wayline.llamaindex", "workflows"), ("wayline.crewai", "crewai")]
)
def test_each_integration_imports_its_framework_only(package: str, framework: str) -> None:
    other = {"workflows": "crewai", "crewai": "workflows"}[framework]
    code = (
        f"import importlib, sys; importlib.import_module({package!r}); "
        f"print({framework!r} in sys.modules, {other!r} in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
