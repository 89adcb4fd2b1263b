"""Server-sent events over ASGI: the response a run's stream goes out in, and the encoding
of its events.

``EventStream`` sends the body from the request's own task and runs one more: a listener
for the client going away (uvicorn speaks ASGI 2.3, where a send after a disconnect is
dropped without an error, so without a listener a stream would follow a run nobody reads
to its end, and ``on_disconnect="cancel"`` would never fire). What else a long-lived
stream needs is done by the code that writes the body: pings when it has been quiet
(``PING``), and ending when the server stops (``wayline.server.bell.Bell.close_streams``,
which ``wayline serve`` rings as uvicorn begins to shut down; a client reconnects to the
stream's ``Location`` with ``Last-Event-ID`` and loses nothing).

It replaced sse-starlette's ``EventSourceResponse``, which runs four tasks a stream (the
body, pings, a disconnect listener, a shutdown listener) and a cancel scope around every
send. Measured with ``bench/server.py``'s load (8 clients x 25 runs, 4 in-process
workers): the server's event loop spent about 0.4 ms of CPU a run less, and served 10%
more runs a second.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["PING", "EventStream", "encode_event"]

PING = b": ping\r\n\r\n"
"""A comment line: keeps proxies from closing a quiet stream; clients ignore it."""
PING_EVERY = 15.0
"""Seconds of silence before a ping (sse-starlette's default, which streams had before)."""
_BREAKS = re.compile(r"\r\n|\r|\n")
_HEADERS = {"Cache-Control": "no-store", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def encode_event(event: str, data: str, event_id: str | None = None) -> str:
    """One event's lines (``id``, ``event``, ``data``, a blank line), as sse-starlette
    wrote them. ``data`` is one line of JSON (the encoder escapes every line break); an
    event name with a break in it (a node named so, in a subgraph's namespace) loses it
    rather than ending the event early."""
    if "\n" in event or "\r" in event:
        event = _BREAKS.sub("", event)
    if event_id is None:
        return f"event: {event}\r\ndata: {data}\r\n\r\n"
    return f"id: {event_id}\r\nevent: {event}\r\ndata: {data}\r\n\r\n"


class EventStream(Response):
    """A ``text/event-stream`` response of ``chunks`` (encoded events, pings), each sent as
    it comes. The iterator is closed however the response ends, so its ``finally`` (a
    waiter to unsubscribe, a run to cancel on disconnect) runs."""

    media_type = "text/event-stream"

    def __init__(
        self, chunks: AsyncIterator[bytes], headers: Mapping[str, str] | None = None
    ) -> None:
        self.chunks = chunks
        self.status_code = 200
        self.background = None
        self.init_headers({**_HEADERS, **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_until_gone, receive, group.cancel_scope)
            try:
                await send(
                    {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                )
                async for chunk in self.chunks:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                group.cancel_scope.cancel()  # the listener, or (client gone) already done
                with anyio.CancelScope(shield=True):
                    aclose = getattr(self.chunks, "aclose", None)
                    if aclose is not None:  # cut between two chunks: its finally runs now
                        await aclose()


async def _until_gone(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel the stream when the client disconnects (a GET's empty request body comes
    first; a POST's body was read by the route)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return
