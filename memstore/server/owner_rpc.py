"""The owner's side door for its front processes: one message each way over a Unix socket.

With `memstore serve --fronts N` the front processes accept HTTP, parse JSON and run the model
work (memstore/server/fronts.py); the owner (the one process holding the store file) answers
only what needs the store. The messages are the frozen dataclasses below, one per operation,
and the owner's dispatch table is built from them (`fronts.OwnerDoor`): a message's fields are
its documentation. A served add is `Admit` (the token verified once: the owner keeps its grant
with the add's ticket), `Context` only for an LLM extractor that reads the store, then `Commit`
(confined again with the kept grant, no second token check); a search is `Snap` or `Search`.

Every message that acts for a request carries its `Authorization` header (or the ticket of an
admitted add) and is checked here (memstore/server/auth.py): a revoked token is refused from the
next call on, and a scoped token gets exactly what it gets from the owner's own routes. A message
is a 4-byte length and a pickle; the socket is private to the owner's user (0600 in a 0700
folder), as the fronts are its own children. Errors travel as their class and fields
(`pack_error`) and are raised again in the front.

>>> import socket
>>> a, b = socket.socketpair()
>>> send_msg(a, Ping()); recv_msg(b)
Ping()
"""
from __future__ import annotations

import os
import pickle
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memstore.api.stages import pack_error, unpack_error
from memstore.core.errors import ServerUnavailableError
from memstore.core.model import AddState, PreparedAdd


@dataclass(frozen=True)
class Admit:
    """May this token call `name(*args, **kwargs)`? -> ((args, kwargs) as it may, scope and actor
    filled in; the add's ticket for the group commit, or None)."""
    authorization: str
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Context:
    """-> the add with the LLM's context read from the store (an LLM extractor's add)."""
    state: AddState


@dataclass(frozen=True)
class Commit:
    """-> what add() returns, through the group committer. `authorization` is checked again only
    when the add has no ticket (no group committer kept its grant)."""
    authorization: str
    prepared: PreparedAdd
    ticket: int | None


@dataclass(frozen=True)
class Forget:
    """An admitted add will not come (it failed in the front): the group commit stops waiting."""
    ticket: int | None


@dataclass(frozen=True)
class Search:
    """-> what search() returns, with the query's vector given (None: the owner embeds it)."""
    authorization: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    vector: Any


@dataclass(frozen=True)
class Snap:
    """-> ("fresh",): the front's snapshot copy (`key`, generation `held`) is current, or
    ("searched", result, key, scope, snapshot or None) (memstore/server/front_search.py)."""
    authorization: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    vector: Any
    key: Any
    held: int | None


@dataclass(frozen=True)
class FailedRun:
    """Record an LLM call that failed in the front, as add() does (`error` packed: pack_error)."""
    state: AddState
    error: Any


@dataclass(frozen=True)
class Reads:
    """The audit of reads: rows of the searches a front answered from its snapshot copies
    (memstore/audit/read_rows.py), sent in batches."""
    rows: tuple[Any, ...]


@dataclass(frozen=True)
class Ping:
    """-> the owner's PID."""


MESSAGES = (Admit, Context, Commit, Forget, Search, Snap, FailedRun, Reads, Ping)

_LEN = struct.Struct("!I")


def send_msg(sock: socket.socket, value: Any) -> None:
    """One message: its length, then its pickle."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LEN.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        buf += chunk
    return bytes(buf)


def recv_msg(sock: socket.socket) -> Any:
    """The next message (ConnectionError when the other side closed)."""
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return pickle.loads(_recv_exact(sock, n))


class OwnerRPCServer:
    """Accept the fronts' connections on `path`; one thread per connection runs `handle(message)`
    and sends back ("ok", value) or ("err", packed error)."""

    def __init__(self, path: str, handle: Callable[[Any], Any]) -> None:
        self.path = path
        self._handle = handle
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        self._sock.bind(path)
        os.chmod(path, 0o600)
        self._sock.listen(256)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="memstore-owner-rpc", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="memstore-owner-rpc-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    msg = recv_msg(conn)
                except (ConnectionError, OSError, EOFError):
                    return
                try:
                    reply: tuple = ("ok", self._handle(msg))
                except BaseException as exc:
                    reply = ("err", pack_error(exc))
                try:
                    send_msg(conn, reply)
                except (ConnectionError, OSError):      # the front died while we worked: nothing to tell
                    return

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.close()
        finally:
            if os.path.exists(self.path):
                os.unlink(self.path)


class OwnerClient:
    """The front's end: `call(op, *args)` on one connection per thread (opened on first use)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()

    def _conn(self) -> socket.socket:
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.path)
            self._local.sock = sock
        return sock

    def call(self, msg: Any) -> Any:
        """Send `msg` (one of MESSAGES), wait for the answer; the owner's error is raised here as
        its own class."""
        try:
            sock = self._conn()
            send_msg(sock, msg)
            status, value = recv_msg(sock)
        except (ConnectionError, OSError, EOFError) as exc:
            self._drop()
            raise ServerUnavailableError(f"the server's owner process did not answer ({type(exc).__name__}: {exc})",
                                         hint="the server is stopping or restarting; retry. A write that was "
                                              "in flight may or may not have been applied") from None
        if status == "err":
            raise unpack_error(value)
        return value

    def _drop(self) -> None:
        sock = getattr(self._local, "sock", None)
        self._local.sock = None
        if sock is not None:
            sock.close()

