"""LangGraph's long-term memory interface, as ``langgraph.store.base``: ``BaseStore`` with
``put/get/search/delete/list_namespaces``, their async twins and ``batch/abatch``, the
records ``Item`` and ``SearchItem``, and the operation types a batch carries.

A port renames ``langgraph.store.base`` to ``wayline.memory.base`` (``wayline.store`` is the
run store, hence the other name). The semantics are LangGraph's, checked against its own
``InMemoryStore`` by the conformance suite in ``tests/memory``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypedDict, cast

from wayline.memory.embed import (
    AEmbeddingsFunc,
    EmbeddingsFunc,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "IndexConfig",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
    "validate_op_namespace",
]


class NotProvided:
    """The default of ``put(ttl=...)``: "the store's default TTL", distinct from None."""

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_PROVIDED = NotProvided()


class Item:
    """A stored value with its place (namespace, key) and timestamps (UTC)."""

    __slots__ = ("created_at", "key", "namespace", "updated_at", "value")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime | str,
        updated_at: datetime | str,
    ) -> None:
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = (
            datetime.fromisoformat(created_at) if isinstance(created_at, str) else created_at
        )
        self.updated_at = (
            datetime.fromisoformat(updated_at) if isinstance(updated_at, str) else updated_at
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return False
        return (
            self.value == other.value
            and self.key == other.key
            and self.namespace == other.namespace
            and self.created_at == other.created_at
            and self.updated_at == other.updated_at
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def dict(self) -> dict[str, Any]:
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.dict().items())})"


class SearchItem(Item):
    """An item found by ``search``, with its similarity ``score`` (None without a query)."""

    __slots__ = ("score",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | str,
        updated_at: datetime | str,
        score: float | None = None,
    ) -> None:
        super().__init__(
            value=value, key=key, namespace=namespace, created_at=created_at, updated_at=updated_at
        )
        self.score = score

    def dict(self) -> dict[str, Any]:
        result = super().dict()
        result["score"] = self.score
        return result


class GetOp(NamedTuple):
    """Read one item."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


class SearchOp(NamedTuple):
    """Items under a namespace prefix, filtered (``$eq $ne $gt $gte $lt $lte``), paged, and
    ranked by similarity to ``query`` when the store has an index."""

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True


NamespacePath = tuple[str | Literal["*"], ...]
"""A namespace pattern: ``"*"`` matches any one label."""

NamespaceMatchType = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """Namespaces matching every condition, truncated to ``max_depth``, sorted, paged."""

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """Store ``value`` at (namespace, key), or delete it (``value`` None). ``index``: the
    store's fields (None), none (False) or these paths; ``ttl`` in minutes."""

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]
    """LangGraph's field name; it shadows ``tuple.index`` there too."""
    ttl: float | None = None


Op = GetOp | SearchOp | PutOp | ListNamespacesOp
Result = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None


class InvalidNamespaceError(ValueError):
    """A namespace LangGraph refuses: empty, a label that is not a non-empty string, holds
    a period or a NUL byte, or a root label ``langgraph``."""


class TTLConfig(TypedDict, total=False):
    refresh_on_read: bool
    """Reads (get, search) extend an item's TTL unless told not to (default True)."""
    omit_expired: bool
    """Reads leave expired items out before a sweep deletes them (wayline: always)."""
    default_ttl: float | None
    """Minutes an item lives after its last access (None: forever)."""
    sweep_interval_minutes: int | None
    """How often a sweeper deletes expired items (wayline: workers sweep)."""


class IndexConfig(TypedDict, total=False):
    dims: int
    embed: Any
    """A LangChain ``Embeddings``, or a function (sync or async) from texts to vectors."""
    fields: list[str] | None
    """JSON paths whose text is embedded (default ``["$"]``: the whole value)."""


class BaseStore(ABC):
    """A key-value store of JSON documents under hierarchical namespaces, with optional
    vector search: every method is one ``batch`` (or ``abatch``) of operations."""

    supports_ttl: bool = False
    ttl_config: TTLConfig | None = None

    __slots__ = ("__weakref__",)

    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result per op (None for puts)."""

    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` for async callers."""

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        _validate_namespace_labels(namespace)
        op = GetOp(namespace, str(key), _ensure_refresh(self.ttl_config, refresh_ttl))
        return cast("Item | None", self.batch([op])[0])

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        _validate_namespace_labels(namespace_prefix)
        refresh = _ensure_refresh(self.ttl_config, refresh_ttl)
        op = SearchOp(namespace_prefix, filter, limit, offset, query, refresh)
        return cast("list[SearchItem]", self.batch([op])[0])

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        self.batch([self._put_op(namespace, key, value, index, ttl)])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        _validate_namespace_labels(namespace)
        self.batch([PutOp(namespace, str(key), None, ttl=None)])

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast("list[tuple[str, ...]]", self.batch([op])[0])

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        _validate_namespace_labels(namespace)
        op = GetOp(namespace, str(key), _ensure_refresh(self.ttl_config, refresh_ttl))
        return cast("Item | None", (await self.abatch([op]))[0])

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        _validate_namespace_labels(namespace_prefix)
        refresh = _ensure_refresh(self.ttl_config, refresh_ttl)
        op = SearchOp(namespace_prefix, filter, limit, offset, query, refresh)
        return cast("list[SearchItem]", (await self.abatch([op]))[0])

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        await self.abatch([self._put_op(namespace, key, value, index, ttl)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        _validate_namespace_labels(namespace)
        await self.abatch([PutOp(namespace, str(key), None)])

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast("list[tuple[str, ...]]", (await self.abatch([op]))[0])

    def _put_op(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any] | None,
        index: Literal[False] | list[str] | None,
        ttl: float | NotProvided | None,
    ) -> PutOp:
        _validate_namespace(namespace)
        if ttl not in (NOT_PROVIDED, None) and not self.supports_ttl:
            raise NotImplementedError(
                f"TTL is not supported by {type(self).__name__}. Use a store "
                "implementation that supports TTL or set ttl=None."
            )
        return PutOp(namespace, str(key), value, index=index, ttl=_ensure_ttl(self.ttl_config, ttl))


def _list_op(
    prefix: NamespacePath | None,
    suffix: NamespacePath | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> ListNamespacesOp:
    _validate_namespace_labels(prefix or ())
    _validate_namespace_labels(suffix or ())
    conditions = []
    if prefix:
        conditions.append(MatchCondition(match_type="prefix", path=prefix))
    if suffix:
        conditions.append(MatchCondition(match_type="suffix", path=suffix))
    return ListNamespacesOp(tuple(conditions), max_depth=max_depth, limit=limit, offset=offset)


def _validate_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    _validate_namespace_labels(namespace)
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph". Got: {namespace}'
        )


def _validate_namespace_labels(namespace: Iterable[Any]) -> None:
    namespace = tuple(namespace)
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels "
                f"must be strings, but got {type(label).__name__}."
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels "
                "cannot contain periods ('.')."
            )
        if "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels "
                "cannot contain NUL bytes ('\\x00')."
            )
        if not label:
            raise InvalidNamespaceError(
                f"Namespace labels cannot be empty strings. Got {label} in {namespace}"
            )


def validate_op_namespace(op: Op) -> None:
    """Check the namespace labels an operation names (a batch calls this on each op)."""
    if isinstance(op, GetOp | PutOp):
        _validate_namespace_labels(op.namespace)
    elif isinstance(op, SearchOp):
        _validate_namespace_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _validate_namespace_labels(condition.path)


def _ensure_refresh(ttl_config: TTLConfig | None, refresh_ttl: bool | None = None) -> bool:
    if refresh_ttl is not None:
        return refresh_ttl
    if ttl_config is not None:
        return ttl_config.get("refresh_on_read", True)
    return True


def _ensure_ttl(
    ttl_config: TTLConfig | None, ttl: float | NotProvided | None = NOT_PROVIDED
) -> float | None:
    if isinstance(ttl, NotProvided):
        return ttl_config.get("default_ttl") if ttl_config else None
    return ttl


_ = (AEmbeddingsFunc, EmbeddingsFunc)  # re-exported names of langgraph.store.base.embed
