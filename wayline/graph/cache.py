"""Node caching (LangGraph's ``CachePolicy`` and ``InMemoryCache``): a node added with
``cache_policy=`` and compiled with ``cache=`` reuses the output of an earlier call on the
same input instead of running again.

A cache is an optimisation, not a record of the run: a cached output becomes the task's
writes like any output and commits with its step, so a replay folds the step's delta and
never reads the cache, and a run resumes the same with the cache empty or gone. A cache
hit is the node not running: its effects do not run either (as in LangGraph).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "BaseCache",
    "CachePolicy",
    "FullKey",
    "InMemoryCache",
    "Namespace",
    "default_cache_key",
    "node_key",
    "task_key",
    "task_namespace",
]

Namespace = tuple[str, ...]
FullKey = tuple[Namespace, str]
ValueT = TypeVar("ValueT")

NODE_NS = "__node_writes__"
"""The first part of a node's cache namespace (then the node's name)."""
TASK_NS = "__task_writes__"
"""The first part of a ``@task``'s cache namespace (then its function's module and name)."""


def default_cache_key(*args: Any, **kwargs: Any) -> str:
    """A key for a node's input: a digest of it as sorted JSON (a value JSON cannot hold
    by its ``repr``). No pickle: a key is only ever compared, never loaded."""
    text = json.dumps([args, kwargs], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class CachePolicy:
    """Cache a node's output by ``key_func(input)`` for ``ttl`` seconds (None: forever)."""

    key_func: Callable[..., str | bytes] = default_cache_key
    ttl: int | None = None


class BaseCache(Generic[ValueT]):
    """LangGraph's cache interface: values by (namespace, key), set with a ttl."""

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        raise NotImplementedError

    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        raise NotImplementedError

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        raise NotImplementedError

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        return self.get(keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        self.set(pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        self.clear(namespaces)


class InMemoryCache(BaseCache[Any]):
    """A process-local cache (thread-safe); values are kept as the node returned them."""

    def __init__(self, *, serde: Any = None) -> None:
        del serde  # LangGraph serializes entries; values here never leave the process
        self._data: dict[Namespace, dict[str, tuple[Any, float | None]]] = {}
        self._lock = threading.Lock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        now = time.time()
        out: dict[FullKey, Any] = {}
        with self._lock:
            for ns, key in keys:
                entry = self._data.get(ns, {}).get(key)
                if entry is None:
                    continue
                value, expiry = entry
                if expiry is not None and expiry <= now:
                    del self._data[ns][key]
                else:
                    out[(ns, key)] = value
        return out

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        now = time.time()
        with self._lock:
            for (ns, key), (value, ttl) in pairs.items():
                expiry = None if ttl is None else now + ttl
                self._data.setdefault(ns, {})[key] = (value, expiry)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._data.clear()
            else:
                for ns in namespaces:
                    self._data.pop(ns, None)


def node_key(policy: CachePolicy, node: str, arg: Any) -> FullKey:
    """The cache key of a node's call on ``arg``."""
    raw = policy.key_func(arg)
    digest = hashlib.sha256(raw.encode() if isinstance(raw, str) else raw).hexdigest()
    return (NODE_NS, node), digest


def task_namespace(fn: Callable[..., Any]) -> Namespace:
    """The cache namespace of a ``@task`` function: its module and qualified name, so two
    tasks of one name in different modules keep apart (LangGraph's ``identifier``)."""
    inner = getattr(fn, "func", fn)  # a functools.partial: the function it wraps
    module = getattr(inner, "__module__", None) or "__dynamic__"
    return (TASK_NS, f"{module}.{getattr(inner, '__qualname__', '__dynamic__')}")


def task_key(policy: CachePolicy, ns: Namespace, args: Any, kwargs: Any) -> FullKey:
    """The cache key of a ``@task`` call: ``key_func(*args, **kwargs)``, digested."""
    raw = policy.key_func(*args, **kwargs)
    digest = hashlib.sha256(raw.encode() if isinstance(raw, str) else raw).hexdigest()
    return ns, digest
