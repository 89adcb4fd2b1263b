"""The low layers do not reach up: no module of wayline.store, wayline.effects, wayline.ids,
wayline.errors or wayline.codec (nor wayline.interop and wayline.forks, which the codec and
the effect ledger use) imports wayline.graph, wayline.worker, wayline.server or
wayline.cli, directly or through any chain of imports, at the top of a module, inside a
function, or under ``TYPE_CHECKING``. Read from the source (``ast``), so an import that
runs only on some path is seen too; a failure prints the chain. The store's modules import
one another without a circle, and each stays small enough to read (one record family a
file, under ``STORE_MAX_LINES``). Among the imports that run (``TYPE_CHECKING`` aside, imports
inside functions counted) no module joins a circle."""

from __future__ import annotations

import ast
import functools
from collections import deque
from pathlib import Path

import wayline

ROOT = Path(wayline.__file__).resolve().parent
LOW = (
    *("wayline.store", "wayline.effects", "wayline.ids", "wayline.errors", "wayline.codec"),
    *("wayline.interop", "wayline.forks"),  # what the codec and the ledger use
)
HIGH = ("wayline.graph", "wayline.worker", "wayline.server", "wayline.cli")
STORE_MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _imports(
    name: str, path: Path, modules: dict[str, Path], *, annotations: bool = True
) -> set[str]:
    """Every wayline module ``name`` imports anywhere in its source (``annotations=False``:
    but under ``TYPE_CHECKING``, which never runs)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    skipped: set[int] = set()
    if not annotations:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import sub`` imports the submodule; ``from pkg import name``, pkg
            subs = [f"{base}.{a.name}" for a in node.names]
            names = [t for t in subs if t not in modules]
            targets = [t for t in subs if t in modules] + ([base] if names else [])
        else:
            continue
        for target in targets:
            if target.startswith("wayline") and target in modules:
                out.add(target)
                # importing a.b.c runs a/b/__init__ first (the root package, the public
                # API that re-exports every layer, is not a layer: ``import wayline``
                # or ``from wayline import X`` names it and is seen as reaching up)
                parts = target.split(".")
                out.update(p for i in range(2, len(parts)) if (p := ".".join(parts[:i])) in modules)
    out.discard(name)
    return out


def _chain_up(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """The shortest chain of imports from ``start`` to a module of ``HIGH``, if any."""
    came: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        here = todo.popleft()
        for nxt in sorted(graph.get(here, ())):
            if nxt in came:
                continue
            came[nxt] = here
            if _within(nxt, HIGH):
                chain: list[str] = [nxt]
                at: str | None = here
                while at is not None:
                    chain.append(at)
                    at = came[at]
                return chain[::-1]
            todo.append(nxt)
    return None


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Every wayline module's wayline imports (read once for the tests of this file)."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_the_low_layers_import_nothing_above_them() -> None:
    modules = _modules()
    graph = _graph()
    low = sorted(m for m in modules if _within(m, LOW))
    assert "wayline.store.sql_store" in low and "wayline.errors" in low  # the scan sees them
    found = [" -> ".join(c) for m in low if (c := _chain_up(m, graph)) is not None]
    assert not found, "a low layer reaches up:\n" + "\n".join(found)


def test_the_scan_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from wayline.graph.types import Interrupt\n"
        "def f():\n    from ..worker import worker\n    import wayline.cli.main\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(src)
    modules = _modules()
    seen = _imports("wayline.store.probe", path, modules)
    assert {"wayline.graph.types", "wayline.worker.worker", "wayline.cli.main"} <= seen


def _cycle(graph: dict[str, set[str]], within: str) -> list[str] | None:
    """A circle of imports among the modules of package ``within`` (None: there is none)."""
    nodes = {m for m in graph if _within(m, (within,)) and m != within}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(here: str) -> list[str] | None:
        state[here] = 1
        path.append(here)
        for nxt in sorted(graph[here] & nodes):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[here] = 2
        return None

    for start in sorted(nodes):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_store_modules_import_one_another_without_a_circle() -> None:
    graph = _graph()
    assert "wayline.store.sql_steps" in graph["wayline.store.sql_store"]  # the scan sees it
    found = _cycle(graph, "wayline.store")
    assert found is None, "the store's modules import each other: " + " -> ".join(found or [])


def test_the_scan_finds_a_circle() -> None:
    graph = {"p": set(), "p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert _cycle(graph, "p") == ["p.a", "p.b", "p.c", "p.a"]
    assert _cycle({"p": set(), "p.a": {"p.b"}, "p.b": set()}, "p") is None


def test_no_store_module_is_longer_than_a_family() -> None:
    sizes = {
        str(path.relative_to(ROOT.parent)): len(path.read_text().splitlines())
        for path in sorted((ROOT / "store").rglob("*.py"))
    }
    print("\n".join(f"{n:5d} {name}" for name, n in sizes.items()))
    long = {name: n for name, n in sizes.items() if n > STORE_MAX_LINES}
    assert not long, f"store modules over {STORE_MAX_LINES} lines (split by family): {long}"


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(here: str) -> None:
        index[here] = low[here] = len(index)
        stack.append(here)
        for nxt in sorted(graph.get(here, ())):
            if nxt not in index:
                visit(nxt)
                low[here] = min(low[here], low[nxt])
            elif nxt in stack:
                low[here] = min(low[here], index[nxt])
        if low[here] == index[here]:
            group = set()
            while True:
                top = stack.pop()
                group.add(top)
                if top == here:
                    break
            if len(group) > 1:
                found.append(group)

    for start in sorted(graph):
        if start not in index:
            visit(start)
    return found


def test_no_module_joins_a_circle_of_the_imports_that_run() -> None:
    modules = _modules()
    graph = {  # a package's __init__, run before any of its modules, is not an edge here
        name: {
            m
            for m in _imports(name, path, modules, annotations=False)
            if modules[m].name != "__init__.py"
        }
        for name, path in modules.items()
    }
    assert "wayline.runtime" in graph["wayline.prebuilt.tool_node"]  # inside a function: seen
    circles = _circles(graph)
    assert not circles, [sorted(c) for c in circles]


def test_the_circle_finder_finds_groups() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"d"}}
    assert _circles(graph) == [{"a", "b"}]
