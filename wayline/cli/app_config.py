"""An app's ``langgraph.json``, as ``langgraph dev`` reads it, for ``wayline serve --config``.

What applies is honoured: ``graphs`` (each name an assistant: ``./path/file.py:attr`` relative
to the file, or ``package.module:attr``; a ``{"path": ...}`` entry too), ``env`` (a ``.env``
file beside it, or a mapping; a variable already set in the environment wins, as in
``langgraph dev``), ``dependencies`` (each local path, and its ``src/`` folder, goes on
``sys.path``, where ``pip install`` of it would have put its packages; installing packages is
left to the user) and ``store`` (the long-term store LangGraph graphs get, on wayline's
memory: ``{"index": {"embed", "dims", "fields"}, "ttl": {"default_ttl",
"refresh_on_read", "sweep_interval_minutes"}}``, ``wayline.langgraph.store``). The other
keys are read and named as not applied (``NOT_APPLIED``): the command prints them,
``docs/langgraph.md`` says why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wayline.errors import ConfigError

__all__ = ["NOT_APPLIED", "AppConfig", "read_app_config"]

NOT_APPLIED = {
    "auth": "wayline serve authenticates with its own API keys (wayline keys create)",
    "http": "custom routes, CORS and middleware: use --cors-origin; no custom app",
    "checkpointer": "threads are always checkpointed by wayline's store (WaylineSaver)",
    "dockerfile_lines": "wayline builds no image",
    "python_version": "wayline runs on the interpreter that runs it",
    "pip_config_file": "wayline installs nothing",
    "image_distro": "wayline builds no image",
    "node_version": "JavaScript graphs are not served",
    "ui": "generative UI components are not served",
    "webhooks": "not applied",
    "keep_pkg_tools": "wayline builds no image",
}
"""The keys of ``langgraph.json`` that ``wayline serve`` reads but does not apply, and why."""
_APPLIED = {"$schema", "graphs", "env", "dependencies", "store"}
_STORE_KEYS = {"index", "ttl"}
_INDEX_KEYS = {"embed", "dims", "fields"}
_TTL_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}


@dataclasses.dataclass(frozen=True)
class AppConfig:
    path: Path
    graphs: dict[str, str]
    """Assistant name -> ``module:attr`` or an absolute ``file.py:attr``."""
    env: dict[str, str]
    paths: list[str]
    """Folders put on ``sys.path`` (local dependencies and their ``src/``)."""
    not_applied: dict[str, str]
    """The keys given that are not applied, and why."""
    store: dict[str, Any] | None = None
    """``store`` as given (``index``, ``ttl``), checked; ``memory()`` builds it."""

    def memory(self) -> Any:
        """The ``WaylineStore`` template LangGraph graphs get (None: no ``store`` given):
        the index's ``embed`` loaded (a path relative to this file, a module, a provider)."""
        if self.store is None:
            return None
        from wayline.langgraph.store import WaylineStore, resolve_embed

        index = self.store.get("index")
        if index is not None and isinstance(index.get("embed"), str):
            index = {**index, "embed": resolve_embed(index["embed"], self.path.resolve().parent)}
        return WaylineStore(index=index, ttl=self.store.get("ttl"))

    def apply(self) -> None:
        """Put the dependencies on ``sys.path`` and the env in ``os.environ`` (unset only)."""
        for folder in reversed(self.paths):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        for key, value in self.env.items():
            os.environ.setdefault(key, value)


def read_app_config(path: str | Path) -> AppConfig:
    """Read ``langgraph.json``; a file that cannot be used is a ``ConfigError`` naming it."""
    file = Path(path)
    try:
        data = json.loads(file.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file} is not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file} must hold a JSON object like {{'graphs': {{...}}}}")
    base = file.resolve().parent
    graphs = data.get("graphs")
    if not isinstance(graphs, dict) or not graphs:
        raise ConfigError(f'{file} names no graphs: add "graphs": {{"agent": "./agent.py:graph"}}')
    specs = {str(name): _spec(file, base, str(name), given) for name, given in graphs.items()}
    unknown = sorted(set(data) - _APPLIED - set(NOT_APPLIED))
    if unknown:
        raise ConfigError(f"{file} has keys langgraph.json does not define: {unknown}")
    return AppConfig(
        path=file,
        graphs=specs,
        env=_env(file, base, data.get("env")),
        paths=_paths(file, base, data.get("dependencies") or []),
        not_applied={k: NOT_APPLIED[k] for k in data if k in NOT_APPLIED},
        store=_store(file, data.get("store")),
    )


def _store(file: Path, given: Any) -> dict[str, Any] | None:
    if given is None:
        return None
    if not isinstance(given, Mapping) or set(given) - _STORE_KEYS:
        raise ConfigError(
            f'{file}: store must be an object with "index" and/or "ttl", not {given!r}'
        )
    out: dict[str, Any] = {}
    index = given.get("index")
    if index is not None:
        if not isinstance(index, Mapping) or set(index) - _INDEX_KEYS:
            raise ConfigError(f'{file}: store.index takes "embed", "dims", "fields": {index!r}')
        dims = index.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise ConfigError(f"{file}: store.index.dims must be a whole number > 0: {dims!r}")
        if not isinstance(index.get("embed"), str) or not index["embed"]:
            raise ConfigError(
                f'{file}: store.index.embed must name the embeddings, e.g. "./embed.py:embed" '
                f'or "openai:text-embedding-3-small"'
            )
        fields = index.get("fields")
        if fields is not None and not (
            isinstance(fields, list) and all(isinstance(f, str) for f in fields)
        ):
            raise ConfigError(f"{file}: store.index.fields must be a list of JSON paths")
        out["index"] = dict(index)
    ttl = given.get("ttl")
    if ttl is not None:
        if not isinstance(ttl, Mapping) or set(ttl) - _TTL_KEYS:
            raise ConfigError(f"{file}: store.ttl takes {sorted(_TTL_KEYS)}: {ttl!r}")
        out["ttl"] = dict(ttl)
    return out


def _spec(file: Path, base: Path, name: str, given: Any) -> str:
    if isinstance(given, Mapping):
        given = given.get("path")
    if not isinstance(given, str) or ":" not in given:
        raise ConfigError(
            f'{file}: graph {name!r} must be "./file.py:attribute" or "module:attribute", '
            f"not {given!r}"
        )
    target, _, attr = given.rpartition(":")
    if target.endswith(".py") or "/" in target:
        return f"{(base / target).resolve()}:{attr}"
    return given


def _env(file: Path, base: Path, given: Any) -> dict[str, str]:
    if given is None:
        return {}
    if isinstance(given, Mapping):
        return {str(k): str(v) for k, v in given.items()}
    if not isinstance(given, str):
        raise ConfigError(f"{file}: env must be a path to a .env file or an object")
    env_file = base / given
    if not env_file.is_file():
        raise ConfigError(f"{file}: env file {given!r} not found (looked for {env_file})")
    out: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _paths(file: Path, base: Path, given: Any) -> list[str]:
    if not isinstance(given, list):
        raise ConfigError(f"{file}: dependencies must be a list")
    out = []
    for dep in given:
        if not isinstance(dep, str):
            raise ConfigError(f"{file}: dependency {dep!r} must be a string")
        if not (dep.startswith(".") or dep.startswith("/")):
            continue  # a package from an index: installing it is the user's
        folder = (base / dep).resolve()
        out.append(str(folder))
        if (folder / "src").is_dir():
            out.append(str(folder / "src"))
    return out
