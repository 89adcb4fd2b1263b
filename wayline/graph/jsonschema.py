"""JSON schemas of a graph's input, output and context, as LangGraph's
``get_input_jsonschema`` / ``get_output_jsonschema`` / ``get_context_jsonschema`` give
them (an API server shows them to clients). Needs pydantic (``pip install
'wayline[pydantic]'``), imported only when asked."""

from __future__ import annotations

import dataclasses
import typing
from typing import TYPE_CHECKING, Any

from wayline.errors import GraphError
from wayline.graph.mixin import as_graph
from wayline.graph.schema import is_typeddict

if TYPE_CHECKING:
    from wayline.graph.compiled import CompiledGraph

__all__ = ["JsonSchemas", "schema_of", "type_schema"]

DEFAULT_NAME = "LangGraph"
"""LangGraph names a graph compiled without ``name=`` this; its schemas' titles use it."""


class JsonSchemas:
    """Mixed into ``CompiledGraph``."""

    def get_input_jsonschema(self, config: Any = None) -> Any:
        graph = as_graph(self)
        return schema_of(graph.builder.input_cls, f"{_title(graph)}Input")

    def get_output_jsonschema(self, config: Any = None) -> Any:
        graph = as_graph(self)
        return schema_of(graph.builder.output_cls, f"{_title(graph)}Output")

    def get_context_jsonschema(self) -> Any:
        graph = as_graph(self)
        cls: Any = graph.context_schema
        if cls is None:
            return None
        pydantic = _pydantic()
        if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
            return typing.cast(Any, cls).model_json_schema()
        if is_typeddict(cls) or dataclasses.is_dataclass(cls):
            return pydantic.TypeAdapter(cls).json_schema()
        raise GraphError(
            f"context_schema {cls!r} is not a pydantic model, TypedDict or dataclass, so it "
            "has no JSON schema"
        )


def _title(graph: CompiledGraph) -> str:
    given = getattr(graph, "given_name", None)
    return given if isinstance(given, str) else DEFAULT_NAME


def schema_of(cls: Any, name: str) -> Any:
    """A state schema's JSON schema: a pydantic model's own, a TypedDict's through
    pydantic, a dataclass's fields as an object named ``name``."""
    pydantic = _pydantic()
    if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
        return typing.cast(Any, cls).model_json_schema()
    if is_typeddict(cls):
        return pydantic.TypeAdapter(cls).json_schema()
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        fields: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                default: Any = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:  # as LangGraph: a field that admits None is optional
                default = None if _admits_none(hints[f.name]) else ...
            fields[f.name] = (hints[f.name], default)
        return pydantic.create_model(name, **fields).model_json_schema()
    return type_schema(cls, name)


def _admits_none(hint: Any) -> bool:
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint is type(None) or type(None) in typing.get_args(hint)


def type_schema(typ: Any, name: str) -> Any:
    """A plain type's JSON schema titled ``name`` (an entrypoint's input or return type)."""
    pydantic = _pydantic()
    root: Any = pydantic.RootModel[typ]
    return pydantic.create_model(name, __base__=root).model_json_schema()


def _pydantic() -> Any:
    try:
        import pydantic
    except ImportError:
        raise GraphError(
            "JSON schemas of a graph are made by pydantic: pip install 'wayline[pydantic]'"
        ) from None
    return pydantic
