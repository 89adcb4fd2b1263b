"""The root run of an ``invoke`` for the langchain-core callbacks its config names: a
LangGraph graph is a Runnable, so a tracer in ``config["callbacks"]`` sees one chain run per
call, ended with the call's output (without its pending questions) or its error.
langchain-core is imported only when callbacks are given (they are its objects)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["end_root", "start_root"]


def start_root(config: Mapping[str, Any] | None, name: str, input: Any) -> Any:
    """The run manager of the call's root chain run, or None (no callbacks)."""
    handlers = (config or {}).get("callbacks")
    if not handlers:
        return None
    from langchain_core.callbacks.manager import CallbackManager

    manager = CallbackManager.configure(
        handlers,
        inheritable_tags=(config or {}).get("tags"),
        inheritable_metadata=(config or {}).get("metadata"),
    )
    inputs = input if isinstance(input, Mapping) else {"input": input}
    return manager.on_chain_start(None, dict(inputs), name=name)


def end_root(run: Any, output: Any = None, error: BaseException | None = None) -> None:
    """End the root run ``start_root`` began (None: nothing to end)."""
    if run is None:
        return
    if error is not None:
        run.on_chain_error(error)
        return
    if isinstance(output, Mapping):
        output = {k: v for k, v in output.items() if k != "__interrupt__"}
    run.on_chain_end(output)
