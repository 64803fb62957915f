"""The body limit of every route, before a byte is parsed (issue 44: a 40 MB body was stored after
15 s; a 2 MB message took 221 s and 1 GB of RSS).

`BodyLimit` wraps the ASGI app: a request whose `Content-Length` is over its route's limit gets the
413 at once, unread; a body without a length (chunked) is counted as it arrives and refused when
it passes the limit, so no more than the limit is ever held. The limit is `limits.max_body_bytes`
(`memstore serve --max-body`), `limits.max_upload_bytes` for `POST /v1/ingest_upload`. The
messages and metadata inside a body are checked by the library's add() (memstore/core/limits.py).

>>> from memstore.core.config import LimitsConfig
>>> route_limit("/v1/ingest_upload", LimitsConfig()) > route_limit("/v1/add", LimitsConfig())
True
"""
from __future__ import annotations

import json
from typing import Any

from memstore.core.config import LimitsConfig
from memstore.core.errors import RequestTooLargeError
from memstore.core.limits import too_large

UPLOAD_ROUTES = ("/v1/ingest_upload",)


def route_limit(path: str, limits: LimitsConfig) -> int:
    """Bytes a body sent to `path` may have."""
    return limits.max_upload_bytes if path in UPLOAD_ROUTES else limits.max_body_bytes


def body_error(path: str, got: int, limits: LimitsConfig, *, counted: bool = False) -> RequestTooLargeError:
    """The 413 of a body over its route's limit."""
    key = "max_upload_bytes" if path in UPLOAD_ROUTES else "max_body_bytes"
    what = f"the request body {'passed' if counted else 'is'} {got:,} bytes"
    return too_large(what, got, route_limit(path, limits), key,
                     "send less per request (several adds; a file through ingest)"
                     if key == "max_body_bytes" else "split the file")


def error_bytes(exc: RequestTooLargeError) -> bytes:
    """The 413's body: the server's one error envelope."""
    message = str(exc)
    body = {"error": {"type": type(exc).__name__, "message": message, "hint": exc.hint, "fields": exc.fields},
            "detail": message}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


class BodyLimit:
    """ASGI middleware: refuse a body over its route's limit (see module doc)."""

    def __init__(self, app: Any, limits: LimitsConfig) -> None:
        self.app, self.limits = app, limits

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        allowed = route_limit(path, self.limits)
        length = _content_length(scope)
        if length is not None and length > allowed:
            await refuse(send, body_error(path, length, self.limits))
            return
        seen = 0
        started = refused = False

        async def counted() -> dict:
            # The 413 is sent here, not by whoever reads the body: FastAPI turns an error raised
            # while it reads a body into its own 400 ("error parsing the body").
            nonlocal seen, refused
            msg = await receive()
            if msg.get("type") == "http.request":
                seen += len(msg.get("body", b""))
                if seen > allowed:
                    exc = body_error(path, seen, self.limits, counted=True)
                    if not started and not refused:
                        refused = True
                        await refuse(send, exc)
                    raise exc
            return msg

        async def watched(msg: dict) -> None:
            nonlocal started
            if refused:
                return              # the 413 went out already: the app's own answer is dropped
            started = started or msg.get("type") == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, counted, watched)
        except RequestTooLargeError:
            if not refused:
                raise


async def refuse(send: Any, exc: RequestTooLargeError) -> None:
    """Send the 413 (and close: the rest of the body is not read)."""
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": error_bytes(exc)})


def _content_length(scope: dict) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
