"""Each framework is imported by its own integration only: LangGraph by ``wayline.langgraph``,
LlamaIndex Workflows by ``wayline.llamaindex``, CrewAI by ``wayline.crewai`` (the optional
``[langgraph]``, ``[llamaindex]`` and ``[crewai]`` extras); langchain-core, the
``[langchain]`` extra, is another matter (docs/architecture.md). Checked in fresh
interpreters: one imports every other module of wayline, then each integration but
LangGraph's, and reports which frameworks were loaded at each point."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

FRAMEWORKS = ("langgraph", "workflows", "llama_index_instrumentation", "crewai")

SCRIPT = f"""
import importlib, json, pathlib, sys
import wayline
root = pathlib.Path(wayline.__path__[0])
integrations = ("wayline.llamaindex", "wayline.crewai", "wayline.langgraph")

def modules(prefix):
    for path in sorted(root.rglob("*.py")):
        name = ".".join(("wayline", *path.relative_to(root).with_suffix("").parts))
        name = name.removesuffix(".__init__")
        if prefix is None and not name.startswith(integrations) or (
            prefix is not None and name.startswith(prefix)
        ):
            yield name

def loaded():
    tops = {{m.split(".")[0] for m in sys.modules}}
    return sorted(tops & set({FRAMEWORKS!r}))

report = {{}}
for name in modules(None):
    importlib.import_module(name)
report["core"] = loaded()
for package in ("wayline.llamaindex", "wayline.crewai"):
    for name in modules(package):
        importlib.import_module(name)
    report[package] = loaded()
print(json.dumps(report))
"""


def _run(code: str) -> Any:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def report() -> dict[str, list[str]]:
    result: dict[str, list[str]] = _run(SCRIPT)
    return result


def test_no_module_outside_the_integrations_imports_a_framework(
    report: dict[str, list[str]],
) -> None:
    assert report["core"] == []


def test_llamaindex_integration_imports_workflows_and_nothing_else(
    report: dict[str, list[str]],
) -> None:
    assert "workflows" in report["wayline.llamaindex"]
    assert "crewai" not in report["wayline.llamaindex"]
    assert "langgraph" not in report["wayline.llamaindex"]


def test_crewai_integration_never_pulls_in_langgraph(report: dict[str, list[str]]) -> None:
    assert "crewai" in report["wayline.crewai"]
    assert "langgraph" not in report["wayline.crewai"]


def test_crewai_integration_alone_imports_no_llamaindex() -> None:
    code = "import importlib, json, sys; importlib.import_module('wayline.crewai'); " + (
        "print(json.dumps(['crewai' in sys.modules, 'workflows' in sys.modules]))"
    )
    assert _run(code) == [True, False]
