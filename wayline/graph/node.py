"""Nodes and branches as the builder records them, and how a node's output becomes writes."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import typing
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wayline.effects.retry import RetryPolicy
from wayline.errors import InvalidUpdateError, ParentCommand, UnknownNodeError
from wayline.graph.algo import ROUTE, SEND
from wayline.graph.timeouts import TimeoutPolicy
from wayline.graph.types import END, Command, Send

__all__ = ["Branch", "NodeSpec", "possible_ends"]


@dataclasses.dataclass(frozen=True, slots=True)
class NodeFunction:
    """A function node as LangGraph's ``RunnableCallable`` shows it: its name, ``func``
    (the sync function) and ``afunc`` (the async one)."""

    name: str
    func: Callable[..., Any] | None
    afunc: Callable[..., Any] | None


@dataclasses.dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    fn: Callable[..., Any]
    is_async: bool
    takes_ctx: bool
    ends: tuple[str, ...] | None
    """Targets a returned ``Command(goto=...)`` may name, from a ``Command[Literal[...]]``
    return annotation; None when the node may route anywhere (or never returns a Command)."""
    retry: RetryPolicy | tuple[RetryPolicy, ...] | None = None
    """Re-run the node in place when it raises (``add_node(..., retry_policy=...)``); of a
    sequence, the first policy whose ``retry_on`` matches the error applies (LangGraph's)."""
    inject: tuple[tuple[str, str], ...] = ()
    """Keyword parameters filled as LangGraph fills them: (parameter, what) where what is
    ``config``, ``runtime``, ``writer`` or ``store``."""
    input_schema: type | None = None
    """The node reads only these keys (its own input schema, as in LangGraph)."""
    error_handler: NodeSpec | None = None
    """Called with the node's input and a ``NodeError`` once the node failed for good (its
    retries spent); what it returns is the node's output (``add_node(error_handler=)``)."""
    timeout: TimeoutPolicy | None = None
    """Caps on each attempt's time (``add_node(..., timeout=...)``, ``wayline.graph.timeouts``)."""
    defer: bool = False
    """Runs only when the run would otherwise end (``add_node(..., defer=True)``)."""
    cache: Any = None
    """The node's ``CachePolicy`` (``add_node(..., cache_policy=...)``; ``wayline.graph.cache``)."""
    end_labels: tuple[tuple[str, str], ...] = ()
    """(target, label) of ``destinations`` given as a mapping: the drawing's edge labels."""

    def policies(self) -> tuple[RetryPolicy, ...]:
        """The node's retry policies, in the order they are tried."""
        if self.retry is None:
            return ()
        return self.retry if isinstance(self.retry, tuple) else (self.retry,)

    @property
    def bound(self) -> Callable[..., Any]:
        """The node's callable, under the name of LangGraph's ``PregelNode.bound``."""
        return self.fn

    @property
    def runnable(self) -> Any:
        """What LangGraph's ``builder.nodes[name].runnable`` is: a Runnable node itself, else
        the function as LangGraph wraps it (``.func`` sync, ``.afunc`` async)."""
        if callable(getattr(self.fn, "invoke", None)):
            return self.fn
        return NodeFunction(
            self.name, None if self.is_async else self.fn, self.fn if self.is_async else None
        )

    def copy(self, update: Mapping[str, Any] | None = None) -> NodeSpec:
        """The node with ``update``'s fields replaced (LangGraph's ``PregelNode.copy``)."""
        return dataclasses.replace(self, **(update or {}))

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """Run the node's Runnable by itself (``graph.nodes["tools"].invoke(...)``)."""
        invoke = getattr(self.fn, "invoke", None)
        if callable(invoke):
            return invoke(input, config, **kwargs)
        return self.fn(input, config) if self.takes_ctx else self.fn(input)

    @classmethod
    def of(
        cls,
        name: str,
        fn: Callable[..., Any],
        retry: RetryPolicy | tuple[RetryPolicy, ...] | None = None,
        *,
        input_schema: type | None = None,
        destinations: Sequence[str] | Mapping[str, str] | None = None,
    ) -> NodeSpec:
        call = fn if inspect.isroutine(fn) else type(fn).__call__  # callable objects
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
        try:
            all_params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            all_params = []
        inject = tuple(
            (p.name, what)
            for p in all_params[1:]
            if (what := _injected(p)) is not None
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        injected = {n for n, _ in inject}
        params = [
            p
            for p in all_params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
            and p.name not in injected
        ]
        # as LangGraph: a second positional parameter gets the config; ``*args`` alone (a
        # wrapper without functools.wraps, a Mock) is called with the state only
        takes_ctx = len([p for p in params if p.kind is not p.VAR_POSITIONAL]) >= 2
        ends = _command_ends(fn)
        labels: tuple[tuple[str, str], ...] = ()
        if destinations is not None:
            ends = tuple(destinations)
            if isinstance(destinations, Mapping):
                labels = tuple((str(k), str(v)) for k, v in destinations.items())
        if input_schema is None and all_params:
            input_schema = _input_annotation(fn, all_params[0].name)
        spec = cls(name, fn, is_async, takes_ctx, ends, retry, inject, input_schema)
        return dataclasses.replace(spec, end_labels=labels) if labels else spec


_INJECTED_NAMES = {
    "config": "config",
    "runtime": "runtime",
    "writer": "writer",
    "store": "store",
    "error": "error",
}


def _injected(param: inspect.Parameter) -> str | None:
    """What LangGraph would pass to this parameter: by name, or a ``Runtime`` annotation."""
    ann = param.annotation
    ann_name = (
        ann if isinstance(ann, str) else getattr(typing.get_origin(ann) or ann, "__name__", "")
    )
    if isinstance(ann_name, str) and ann_name.split("[")[0] == "Runtime":
        return "runtime"
    if ann_name == "NodeError":
        return "error"
    return _INJECTED_NAMES.get(param.name)


def _input_annotation(fn: Callable[..., Any], first: str) -> type | None:
    """The TypedDict/dataclass/pydantic class a node's first parameter is annotated with."""
    target = fn if inspect.isroutine(fn) else type(fn).__call__  # callable objects
    try:
        hint = typing.get_type_hints(target).get(first)
    except Exception:
        return None
    if not isinstance(hint, type):
        return None
    from wayline.graph.schema import is_typeddict

    is_model = isinstance(getattr(hint, "model_fields", None), dict)
    if is_typeddict(hint) or dataclasses.is_dataclass(hint) or is_model:
        return hint
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: ``path(state)`` names the next node(s), maybe via ``path_map``."""

    path: Callable[..., Any]
    path_map: Mapping[Hashable, str] | None
    ends: tuple[str, ...] | None
    input_schema: type | None = None
    """The schema the router's first parameter is annotated with: it reads those keys."""
    inject: tuple[tuple[str, str], ...] = ()
    """Keyword parameters filled as for a node (``config``, ``runtime``, ``writer``,
    ``store``): a router may read the run's context, as in LangGraph."""

    @classmethod
    def of(
        cls,
        path: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None,
    ) -> Branch:
        mapping: Mapping[Hashable, str] | None
        if path_map is None:
            mapping = None
        elif isinstance(path_map, Mapping):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        ends = tuple(mapping.values()) if mapping is not None else possible_ends(path)
        try:
            signature = list(inspect.signature(path).parameters.values())
        except (TypeError, ValueError):
            signature = []
        schema = _input_annotation(path, signature[0].name) if signature else None
        inject = tuple(
            (p.name, what)
            for p in signature[1:]
            if (what := _injected(p)) is not None
            and what != "error"
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        return cls(path, mapping, ends, schema, inject)

    def route(self, state: Any, **injected: Any) -> Any:
        """The router's answer; an async router is awaited (on a thread of its own when an
        event loop is running here, since routing is synchronous)."""
        result = self.path(state, **injected)
        if not inspect.isawaitable(result):
            return result
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_awaited(result))
        ctx = contextvars.copy_context()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(ctx.run, asyncio.run, _awaited(result)).result()

    def resolve(self, result: Any, source: str) -> list[str | Send]:
        items = result if isinstance(result, list | tuple) else [result]
        out: list[str | Send] = []
        for item in items:
            if isinstance(item, Send):
                out.append(item)
            elif self.path_map is not None:
                try:
                    out.append(self.path_map[item])
                except (KeyError, TypeError):
                    raise UnknownNodeError(
                        f"conditional edge from {source!r} returned {item!r}, which is not a "
                        f"key of its path_map {list(self.path_map)}"
                    ) from None
            else:
                out.append(item)
        return out


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def possible_ends(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    """Targets named by a ``Literal[...]`` return annotation, if there is one."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return None
    ret = hints.get("return")
    if ret is None:
        return None
    if typing.get_origin(ret) is typing.Literal:
        return tuple(str(a) for a in typing.get_args(ret))
    return None


def _command_ends(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    try:
        ret = typing.get_type_hints(fn).get("return")
    except Exception:
        return None
    if ret is None:
        return ()
    if ret is Command:
        return None
    if typing.get_origin(ret) is Command:
        (arg,) = typing.get_args(ret) or (None,)
        if typing.get_origin(arg) is typing.Literal:
            return tuple(str(a) for a in typing.get_args(arg))
        return None
    return ()


def split_output(output: Any, node: str) -> tuple[Any, list[str | Send]]:
    """A node's return value as (state update, goto targets)."""
    if isinstance(output, Command):
        if output.graph == Command.PARENT:
            raise ParentCommand(output)
        if output.graph is not None:
            raise InvalidUpdateError(
                f"node {node!r} returned Command(graph={output.graph!r}): only "
                "Command.PARENT (the graph that runs this one as a subgraph) is supported"
            )
        goto = output.goto
        targets = [goto] if isinstance(goto, str | Send) else list(goto)
        return output.update, targets
    if isinstance(output, list | tuple) and output and any(isinstance(o, Command) for o in output):
        # Commands beside plain updates (a ToolNode whose tools return both), as LangGraph.
        update: list[Any] = []
        targets = []
        for item in output:
            part, more = split_output(item, node) if isinstance(item, Command) else (item, [])
            update.append(part)
            targets.extend(more)
        return update, targets
    return output, []


def route_writes(
    targets: Sequence[str | Send], nodes: Mapping[str, Any], source: str
) -> list[tuple[str, Any]]:
    """Routing writes for ``targets``, each checked against the graph's nodes."""
    writes: list[tuple[str, Any]] = []
    for target in targets:
        if isinstance(target, Send):
            if target.node not in nodes:
                raise UnknownNodeError(
                    f"{source!r} sent to unknown node {target.node!r}; known nodes: {sorted(nodes)}"
                )
            writes.append((SEND, target))
            continue
        if type(target) is not str and isinstance(target, str):  # a str enum member
            target = str.__str__(target)  # (LangGraph allows them) routes as its text
        if target == END or target in nodes:
            writes.append((ROUTE, target))
        else:
            raise UnknownNodeError(
                f"{source!r} routed to unknown node {target!r}; known nodes: {sorted(nodes)}"
            )
    return writes
