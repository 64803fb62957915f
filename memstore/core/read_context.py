"""Who is reading: the token and the door of the read in progress, for the audit of reads.

A context variable, so it follows a request into the worker thread that serves it (FastAPI's
thread pool, `asyncio.to_thread` and anyio copy the context). The server sets the token
(memstore/server/scoped_memory.py); each door (the server, a front, MCP, LangGraph, the dashboard,
the CLI) names itself; the library reading in-process is door "library" with no token. The door
named first wins (MCP's tools run through the server's guarded memory: the read came through MCP);
a token named inside replaces one named outside. `quiet()` marks reads a write makes for itself
(an update checking the memory's scope), which are not reads of the caller's.

>>> current()
Reader(token=None, door='library', quiet=False)
>>> with reading(door="mcp"):
...     with reading(token="alice-laptop", door="server"):
...         current()
Reader(token='alice-laptop', door='mcp', quiet=False)
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import NamedTuple


class Reader(NamedTuple):
    token: str | None
    door: str
    quiet: bool


_UNSET = Reader(None, "", False)
_READER: contextvars.ContextVar[Reader] = contextvars.ContextVar("memstore_reader", default=_UNSET)


def current() -> Reader:
    """The reader of the call in progress (door "library" when no door named itself)."""
    r = _READER.get()
    return r if r.door else r._replace(door="library")


@contextlib.contextmanager
def reading(*, token: str | None = None, door: str | None = None, quiet: bool | None = None) -> Iterator[Reader]:
    """Reads inside come from `token` through `door` (an outer door stays), or are `quiet`."""
    r = _READER.get()
    new = Reader(token if token is not None else r.token, r.door or door or "",
                 r.quiet if quiet is None else quiet)
    tok = _READER.set(new)
    try:
        yield new
    finally:
        _READER.reset(tok)


def quiet() -> contextlib.AbstractContextManager[Reader]:
    """Reads inside are not recorded (a write's own lookups)."""
    return reading(quiet=True)
