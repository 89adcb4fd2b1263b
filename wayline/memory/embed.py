"""Embeddings for semantic search, as ``langgraph.store.base.embed``: the user's function
(sync or async) or a LangChain ``Embeddings`` behind one small interface, and the JSON-path
helpers that pick the text of an item to embed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "AEmbeddingsFunc",
    "Embedder",
    "EmbeddingsFunc",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]

EmbeddingsFunc = Callable[[Sequence[str]], list[list[float]]]
AEmbeddingsFunc = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


@runtime_checkable
class Embedder(Protocol):
    """What a store calls: LangChain's ``Embeddings`` has exactly these four methods."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def aembed_query(self, text: str) -> list[float]: ...


class _FuncEmbedder:
    """A plain function as an ``Embedder``: a sync one runs in a thread for async callers,
    an async one on a private loop for sync callers."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.is_async = asyncio.iscoroutinefunction(func) or asyncio.iscoroutinefunction(
            getattr(func, "__call__", None)  # noqa: B004
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.is_async:
            return _vectors(asyncio.run(self.func(texts)))
        return _vectors(self.func(texts))

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.is_async:
            return _vectors(await self.func(texts))
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


def _vectors(found: Any) -> list[list[float]]:
    return [[float(x) for x in v] for v in found]


def ensure_embeddings(embed: Any) -> Embedder:
    """An ``Embedder`` for ``index["embed"]``: an ``Embeddings`` object, or a function."""
    if embed is None:
        raise ValueError("embed must be provided")
    if isinstance(embed, str):
        raise ValueError(
            f"embed={embed!r}: wayline does not load embedding models by name; pass an "
            "Embeddings object or a function from a list of texts to a list of vectors"
        )
    if isinstance(embed, Embedder):
        return embed
    if callable(embed):
        return _FuncEmbedder(embed)
    raise ValueError(f"embed must be an Embeddings object or a function, not {embed!r}")


def tokenize_path(path: str) -> list[str]:
    """``"a.b[0].c"`` -> ``["a", "b", "[0]", "c"]`` (``{x,y}`` groups stay whole)."""
    tokens: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char in "[{":
            if current:
                tokens.append("".join(current))
                current = []
            close = "]" if char == "[" else "}"
            depth, chars = 1, [char]
            i += 1
            while i < len(path) and depth > 0:
                if path[i] == char:
                    depth += 1
                elif path[i] == close:
                    depth -= 1
                chars.append(path[i])
                i += 1
            tokens.append("".join(chars))
            continue
        if char == ".":
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(char)
        i += 1
    if current:
        tokens.append("".join(current))
    return tokens


def _leaf(obj: Any) -> list[str]:
    if isinstance(obj, str | int | float | bool):
        return [str(obj)]
    if isinstance(obj, list | dict):
        return [json.dumps(obj, sort_keys=True, ensure_ascii=False)]
    return []


def get_text_at_path(obj: Any, path: str | list[str]) -> list[str]:
    """The texts at a JSON path of ``obj`` (``"$"``: the whole object as JSON)."""
    if isinstance(obj, Mapping) and not isinstance(obj, dict):
        obj = dict(obj)
    if not path or path == "$":
        return [json.dumps(obj, sort_keys=True, ensure_ascii=False)]
    tokens = tokenize_path(path) if isinstance(path, str) else path
    return _extract(obj, tokens, 0)


def _extract(obj: Any, tokens: list[str], pos: int) -> list[str]:
    if pos >= len(tokens):
        return _leaf(obj)
    token = tokens[pos]
    results: list[str] = []
    if token.startswith("[") and token.endswith("]"):
        if not isinstance(obj, list):
            return []
        index = token[1:-1]
        if index == "*":
            for item in obj:
                results.extend(_extract(item, tokens, pos + 1))
        else:
            try:
                idx = int(index)
            except ValueError:
                return []
            idx = len(obj) + idx if idx < 0 else idx
            if 0 <= idx < len(obj):
                results.extend(_extract(obj[idx], tokens, pos + 1))
    elif token.startswith("{") and token.endswith("}"):
        if not isinstance(obj, dict):
            return []
        for field in (f.strip() for f in token[1:-1].split(",")):
            current: Any = obj
            for part in tokenize_path(field):
                current = current.get(part) if isinstance(current, dict) else None
                if current is None:
                    break
            if current is not None:
                results.extend(_leaf(current))
    elif token == "*":
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else []
        for value in values:
            results.extend(_extract(value, tokens, pos + 1))
    elif isinstance(obj, dict) and token in obj:
        results.extend(_extract(obj[token], tokens, pos + 1))
    return results
